import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, type TestServer } from '../support/harness.js';
import { rowsOf } from '../delivery/helpers.js';
import { inboundQueue } from '../support/intake-queue.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { rfc5322 } from './smtp-wire.js';
import { startSmtpTestServer } from './world.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { IntakeQueueWorker } from '../../src/core/flows/intake/intake-queue.worker.js';

// Two worker replicas (two processes' pools and commit groups) drain port 25's queue at once over
// the same mailboxes, messages to one, two and three of them. Their transactions meet on the
// mailbox rows (quota settlement, event sequence), which go last in each batch (database.ts
// `hotRow`): every copy is stored once, none is set aside, and each mailbox's counters, quota use
// and event sequence come out exact. (A commit group that fails, a deadlock included, runs its
// members again alone, so this guards the outcome, not the absence of a retry.)

let server: TestServer;
let replica: Runtime;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
const q = rowsOf(() => server);

beforeAll(async () => {
  dns = await startDnsStub({
    'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_dmarc.sender.example': { TXT: ['v=DMARC1; p=none'] },
  });
  server = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server } });
});
afterAll(async () => {
  await replica?.close();
  await server?.close();
  await dns?.close();
});

const worker = (runtime: Runtime, id: string) =>
  new IntakeQueueWorker(runtime.services.db, inboundQueue(runtime), runtime.services.clock, silentLogger, {
    workerId: id,
    pollIntervalMs: 3_600_000,
    leaseMs: 60_000,
    batch: 32,
    retry: { baseMs: 1_000, maxMs: 1_000 },
    maxAttempts: 1,
  });

describe.runIf(ENGINE === 'postgres')('two worker replicas draining port 25’s queue', () => {
  it('store every copy once, with exact counters, quota use and gapless event sequences', async () => {
    const x = await server.createDomain();
    const boxes = await Promise.all(['a', 'b', 'c'].map((n) => server.createMailbox(x.token, `${n}@${x.name}`)));
    const inbound = server.runtime.services.transport.inbound;
    const expected = new Map(boxes.map((b) => [b.mailboxId, 0]));
    const MESSAGES = 150;
    for (let i = 0; i < MESSAGES; i += 15)
      await Promise.all(
        Array.from({ length: 15 }, async (_, j) => {
          const n = i + j;
          // One, two or three recipients, starting at a different mailbox each time.
          const to = Array.from({ length: 1 + (n % 3) }, (_, k) => boxes[(n + k) % boxes.length]!);
          const recipients = await Promise.all(to.map((b) => inbound.checkRecipient(b.address, 0)));
          for (const b of to) expected.set(b.mailboxId, expected.get(b.mailboxId)! + 1);
          const raw = rfc5322({ from: 'news@sender.example', to: to[0]!.address, subject: `drain ${n}` });
          const accepted = await inbound.accept(
            { mailFrom: 'news@sender.example', recipients, clientAddress: '127.0.0.1', helo: 'peer', tls: false },
            Readable.from([Buffer.from(raw)]),
          );
          expect(accepted.queued).toBe(true);
        }),
      );
    expect((await q`select count(*)::int as n from inbound_queue`)[0].n).toBe(MESSAGES);

    replica = await startRuntime(
      loadConfig({
        DATABASE_URL: server.databaseUrl!,
        MAILBOX_DATA_DIR: server.dataDir,
        DNS_SERVERS: dns.server,
        SMTP_HOSTNAME: server.runtime.services.config.SMTP_HOSTNAME,
        LOG_LEVEL: 'error',
      }),
      { roles: [], log: silentLogger, skipMigrations: true },
    );
    const drained = await Promise.all([
      worker(server.runtime, 'replica-1').drain(),
      worker(replica, 'replica-2').drain(),
    ]);
    expect(drained[0] + drained[1]).toBe(MESSAGES);
    expect(drained.every((n) => n > 0)).toBe(true); // both replicas took part

    expect(await q`select status, last_error from inbound_queue`).toEqual([]); // none failed or deferred
    for (const box of boxes) {
      const n = expected.get(box.mailboxId)!;
      const subjects = (await q`select subject from message where mailbox_id = ${box.mailboxId}`).map((r) => r.subject);
      expect(subjects).toHaveLength(n);
      expect(new Set(subjects).size).toBe(n); // each copy once
      const [row] =
        await q`select inbound_count::int as count, storage_used_bytes::int8::text as used, event_seq::int as seq,
          (select coalesce(sum(stored_bytes), 0)::int8::text from message where mailbox_id = ${box.mailboxId}) as stored
        from mailbox where id = ${box.mailboxId}`;
      expect(row.count).toBe(n);
      expect(row.used).toBe(row.stored); // every reservation settled to the stored size
      const seqs = (
        await q`select seq::int as seq from mailbox_event where mailbox_id = ${box.mailboxId} and type = 'message.received' order by seq`
      ).map((r) => r.seq);
      expect(seqs).toHaveLength(n);
      // Gapless and committed in order: the received events are the mailbox's last n sequences.
      expect(seqs).toEqual(Array.from({ length: n }, (_, i) => row.seq - n + 1 + i));
    }
  });
});
