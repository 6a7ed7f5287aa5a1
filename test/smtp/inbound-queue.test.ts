import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, type TestServer } from '../support/harness.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';
import { deliverQueued, inboundOutcomes } from '../support/intake-queue.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { mxPort, sendToMx, startSmtpTestServer } from './world.js';
import { reservationFor } from '../../src/core/state/quota/storage-quota.store.js';
import { claimInbound } from '../../src/core/flows/inbound/inbound-queue.store.js';
import { QueueClaimLost } from '../../src/core/flows/intake/intake-queue.store.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { sql } from '../../src/storage/database.js';

// Queued intake on port 25 (docs/api.md, "Queued intake"): the 250 follows the commit of a queue
// row, the worker stores the message behind it, exactly once, and settles the quota reserved.

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let x: { domainId: string; name: string; token: string };
const q = rowsOf(() => server);
let boxes = 0;
const newBox = () => server.createMailbox(x.token, `box${++boxes}@${x.name}`);
const setQuota = (mailboxId: string, bytes: number | null) =>
  q`update mailbox set storage_quota_bytes = ${bytes} where id = ${mailboxId}`;
const used = async (mailboxId: string) =>
  Number((await q`select storage_used_bytes from mailbox where id = ${mailboxId}`)[0].storage_used_bytes);
const stored = (mailboxId: string) =>
  q`select id, subject, stored_bytes from message where mailbox_id = ${mailboxId} order by created_at`;
const queueRow = async (id: string) => (await q`select * from inbound_queue where id = ${id}`)[0];

const send = sendToMx;
/** A series of GET /metrics (the database gauges are read at scrape time). */
async function gauge(series: string): Promise<number | undefined> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
const queueIdOf = (reply: string) => /^250 2\.0\.0 Queued as (inq_\w+)$/.exec(reply)?.[1];

beforeAll(async () => {
  dns = await startDnsStub({
    'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_dmarc.sender.example': { TXT: ['v=DMARC1; p=none'] },
  });
  server = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server } });
  x = await server.createDomain();
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('queued intake on port 25', () => {
  it('answers 250 after the queue row commits, reserves quota, and the worker stores it once and settles', async () => {
    const box = await newBox();
    await setQuota(box.mailboxId, 10_000_000);
    const raw = rfc5322({
      from: 'news@sender.example',
      to: box.address,
      subject: 'queued one',
      body: 'x'.repeat(3000),
    });
    const queueId = queueIdOf(await send(mxPort(server), box.address, raw));
    expect(queueId).toBeDefined();
    const row = await queueRow(queueId!);
    expect(row).toMatchObject({ status: 'pending', mail_from: 'news@sender.example', helo: 'peer.sender.example' });
    expect(Buffer.from(row.raw).toString()).toBe(`${raw}\r\n`);
    expect(row.recipients).toEqual([{ address: box.address, mailboxId: box.mailboxId, quotaLimited: true }]);
    // Reserved at intake, nothing stored yet; /metrics shows it waiting.
    expect(await used(box.mailboxId)).toBe(reservationFor(row.raw.length));
    expect(await stored(box.mailboxId)).toHaveLength(0);
    expect(await gauge('mailbox_inbound_queue_depth{status="pending"}')).toBeGreaterThanOrEqual(1);

    const delivered = () => inboundOutcomes('delivered');
    const before = await delivered();
    await deliverQueued(server.runtime, queueId);
    expect(await delivered()).toBe(before + 1); // mailbox_delivery_outcomes_total{route="inbound"}
    const [message, ...more] = await stored(box.mailboxId);
    expect(more).toHaveLength(0);
    expect(message.subject).toBe('queued one');
    expect(await queueRow(queueId!)).toBeUndefined();
    // Settled: the counter is what the message occupies, no more.
    expect(await used(box.mailboxId)).toBe(Number(message.stored_bytes));
    const { body } = await server.api(box.token).get(`/api/messages/${message.id}`);
    expect(body.data).toMatchObject({ origin: 'external', authentication: { spf: 'pass' } });
  });

  it('reserves nothing in a mailbox without a quota', async () => {
    const box = await newBox();
    const queueId = queueIdOf(
      await send(mxPort(server), box.address, rfc5322({ from: 'news@sender.example', to: box.address })),
    );
    expect((await queueRow(queueId!)).recipients[0].quotaLimited).toBe(false);
    expect(await used(box.mailboxId)).toBe(0);
    await deliverQueued(server.runtime, queueId);
    expect(await used(box.mailboxId)).toBe(Number((await stored(box.mailboxId))[0].stored_bytes));
  });

  it('a message larger decoded than its reservation charges the excess, refused only where the quota has no room', async () => {
    // A body of "é" travels as UTF-8 (2 bytes each) but says ISO-8859-1: each byte decodes to a
    // character of 2 UTF-8 bytes, so raw + text ≈ 3× the raw size, past the reservation (2× + 8 KiB).
    const latin1 = (to: string, subject: string) =>
      `From: news@sender.example\r\nTo: ${to}\r\nSubject: ${subject}\r\nMIME-Version: 1.0\r\n` +
      'Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\n' +
      Array.from({ length: 250 }, () => `${'é'.repeat(78)}`).join('\r\n');
    const roomy = await newBox();
    await setQuota(roomy.mailboxId, 10_000_000);
    const big = queueIdOf(await send(mxPort(server), roomy.address, latin1(roomy.address, 'accented')));
    const reserved = Number((await queueRow(big!)).reserved_bytes);
    await deliverQueued(server.runtime, big);
    const [message] = await stored(roomy.mailboxId);
    expect(Number(message.stored_bytes)).toBeGreaterThan(reserved); // the excess path
    expect(await used(roomy.mailboxId)).toBe(Number(message.stored_bytes));

    const tight = await newBox();
    const raw = latin1(tight.address, 'no room for the excess');
    await setQuota(tight.mailboxId, reservationFor(Buffer.byteLength(raw) + 2) + 1_000);
    const refused = queueIdOf(await send(mxPort(server), tight.address, raw));
    expect(refused).toBeDefined(); // the reservation fitted
    await expect(deliverQueued(server.runtime, refused)).rejects.toThrow(/QUOTA_EXCEEDED/);
    expect(await queueRow(refused!)).toMatchObject({ status: 'failed' });
    expect(await stored(tight.mailboxId)).toHaveLength(0);
    expect(await used(tight.mailboxId)).toBe(0); // reservation given back, the counter never passed the quota
  });

  it('near the quota, where the reservation does not fit, the exact charge of the direct path decides', async () => {
    const box = await newBox();
    const raw = rfc5322({ from: 'news@sender.example', to: box.address, subject: 'fits exactly' });
    await setQuota(box.mailboxId, 5_000); // room for the message, not for reservationFor(its size)
    expect(reservationFor(raw.length)).toBeGreaterThan(5_000);
    expect(await send(mxPort(server), box.address, raw)).toBe('250 2.0.0 Delivered');
    expect(await stored(box.mailboxId)).toHaveLength(1);
    expect(
      await q`select id from inbound_queue where recipients @> ${JSON.stringify([{ mailboxId: box.mailboxId }])}::jsonb`,
    ).toHaveLength(0);
  });

  // The reservation is one statement with the queue row (insertReserving): where one recipient's
  // mailbox has no room for it, nothing is reserved in any, and the direct path charges each exactly.
  it('two recipients, one without room for the reservation: neither is charged a reservation', async () => {
    const [roomy, tight] = [await newBox(), await newBox()];
    const raw = rfc5322({ from: 'news@sender.example', to: `${roomy.address}, ${tight.address}`, subject: 'pair' });
    await setQuota(roomy.mailboxId, 10_000_000);
    await setQuota(tight.mailboxId, 5_000); // room for the message, not for its reservation
    const wire = await SmtpWire.connect(mxPort(server));
    await wire.cmd('EHLO peer.sender.example', 250);
    await wire.cmd('MAIL FROM:<news@sender.example>', 250);
    await wire.cmd(`RCPT TO:<${roomy.address}>`, 250);
    await wire.cmd(`RCPT TO:<${tight.address}>`, 250);
    await wire.cmd('DATA', 354);
    expect((await wire.cmd(`${raw}\r\n.`)).last).toBe('250 2.0.0 Delivered');
    await wire.cmd('QUIT', 221);
    for (const box of [roomy, tight]) {
      const [message] = await stored(box.mailboxId);
      // What each mailbox is charged is its stored copy, no reservation left behind in either.
      expect(await used(box.mailboxId)).toBe(Number(message.stored_bytes));
    }
    expect(
      await q`select id from inbound_queue where recipients @> ${JSON.stringify([{ mailboxId: roomy.mailboxId }])}::jsonb`,
    ).toHaveLength(0);
  });

  it('a worker whose lease ran out cannot store the message a second time', async () => {
    const box = await newBox();
    const queueId = queueIdOf(
      await send(
        mxPort(server),
        box.address,
        rfc5322({ from: 'news@sender.example', to: box.address, subject: 'once' }),
      ),
    );
    const { db, clock, transport } = server.runtime.services;
    // Worker A claims it and stalls past its lease (a kill -9 leaves exactly this behind) …
    const [stale] = await claimInbound(db, 'worker-a', 1, 1, clock.now());
    expect(stale!.id).toBe(queueId);
    await new Promise((r) => setTimeout(r, 5));
    // … worker B takes it over and stores it …
    await deliverQueued(server.runtime, queueId);
    // … and A, waking up, finds the row gone: its transaction rolls back.
    await expect(transport.inbound.deliverQueued(stale!)).rejects.toBeInstanceOf(QueueClaimLost);
    expect((await stored(box.mailboxId)).map((m) => m.subject)).toEqual(['once']);
  });

  it('a refusal found behind the 250 sets the message aside (failed, with its reason) and gives the reservation back', async () => {
    const box = await newBox();
    await setQuota(box.mailboxId, 10_000_000);
    const spoofed = `ceo-${boxes}.example`;
    const raw = rfc5322({ from: `boss@${spoofed}`, to: box.address, subject: 'unsigned' });
    const queueId = queueIdOf(await send(mxPort(server), box.address, raw, `boss@${spoofed}`));
    expect(queueId).toBeDefined(); // not hosted when it arrived …
    await server.createDomain(spoofed); // … hosted before the worker got to it: our DKIM signature is required
    const failedBefore = await inboundOutcomes('failed');
    await expect(deliverQueued(server.runtime, queueId)).rejects.toThrow(/HOSTED_SENDER_UNSIGNED/);
    expect(await inboundOutcomes('failed')).toBe(failedBefore + 1);
    expect(await gauge('mailbox_inbound_queue_depth{status="failed"}')).toBeGreaterThanOrEqual(1);
    expect(await queueRow(queueId!)).toMatchObject({
      status: 'failed',
      last_error: expect.stringMatching(/^HOSTED_SENDER_UNSIGNED/),
    });
    expect(await stored(box.mailboxId)).toHaveLength(0);
    expect(await used(box.mailboxId)).toBe(0);
  });

  it('a mailbox deleted while the message waited gets no copy; the other recipients do', async () => {
    const [kept, deleted, alone] = [await newBox(), await newBox(), await newBox()];
    const wire = await SmtpWire.connect(mxPort(server));
    await wire.cmd('EHLO peer.sender.example', 250);
    await wire.cmd('MAIL FROM:<news@sender.example>', 250);
    await wire.cmd(`RCPT TO:<${kept.address}>`, 250);
    await wire.cmd(`RCPT TO:<${deleted.address}>`, 250);
    await wire.cmd('DATA', 354);
    const both = queueIdOf(
      (await wire.cmd(`${rfc5322({ from: 'news@sender.example', to: kept.address, subject: 'two' })}\r\n.`)).last,
    );
    await wire.cmd('QUIT', 221);
    const lone = queueIdOf(
      await send(mxPort(server), alone.address, rfc5322({ from: 'news@sender.example', to: alone.address })),
    );
    await q`delete from mailbox where id in (${deleted.mailboxId}, ${alone.mailboxId})`;
    await deliverQueued(server.runtime, both);
    await deliverQueued(server.runtime, lone);
    expect((await stored(kept.mailboxId)).map((m) => m.subject)).toEqual(['two']);
    expect(await q`select id from message where mailbox_id in (${deleted.mailboxId}, ${alone.mailboxId})`).toHaveLength(
      0,
    );
    expect(await queueRow(both!)).toBeUndefined();
    expect(await queueRow(lone!)).toBeUndefined();
  });

  it('refuses before the 250 what the direct path refuses: a MIME bomb is 554 and leaves no queue row', async () => {
    const box = await newBox();
    let body = 'leaf\r\n';
    for (let i = 40; i >= 0; i--)
      body = `--n${i}\r\nContent-Type: multipart/mixed; boundary="n${i + 1}"\r\n\r\n${body}--n${i}--\r\n`;
    const raw = `From: bomb@sender.example\r\nTo: ${box.address}\r\nSubject: bomb\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="n0"\r\n\r\n${body}`;
    const before = (await q`select count(*)::int as n from inbound_queue`)[0].n;
    expect(await send(mxPort(server), box.address, raw, 'bomb@sender.example')).toMatch(/^554 5\.6\.0 /);
    expect((await q`select count(*)::int as n from inbound_queue`)[0].n).toBe(before);
  });

  it('the worker role delivers what its own process queued, at once', async () => {
    const withWorker = await startSmtpTestServer({
      roles: ['api', 'smtp', 'worker'],
      env: { DNS_SERVERS: dns.server, INBOUND_QUEUE_POLL_INTERVAL: '1h' }, // no poll: only the wake-up can deliver
    });
    try {
      const d = await withWorker.createDomain();
      const box = await withWorker.createMailbox(d.token, `w@${d.name}`);
      const reply = await send(
        mxPort(withWorker),
        box.address,
        rfc5322({ from: 'news@sender.example', to: box.address, subject: 'woken' }),
      );
      expect(queueIdOf(reply)).toBeDefined();
      const list = await waitFor(
        async () => {
          const { body } = await withWorker.api(box.token).get('/api/messages');
          return body.data.items.length > 0 && body.data.items;
        },
        10_000,
        'the worker to store the queued message',
      );
      expect(list.map((m: { subject: string }) => m.subject)).toEqual(['woken']);
    } finally {
      await withWorker.close();
    }
  });

  it.runIf(ENGINE === 'postgres')(
    'a worker in another process delivers what an smtp-only process queued (its poll)',
    async () => {
      const box = await newBox();
      const worker = await startRuntime(
        loadConfig({
          DATABASE_URL: server.databaseUrl!,
          MAILBOX_DATA_DIR: server.dataDir,
          MAILBOX_SECRET_KEY: server.runtime.services.config.MAILBOX_SECRET_KEY!,
          DNS_SERVERS: dns.server,
          SMTP_HOSTNAME: 'mail.test',
          INBOUND_QUEUE_POLL_INTERVAL: '50ms',
          HEALTH_SERVER: 'false',
        }),
        { roles: ['worker'], log: silentLogger },
      );
      try {
        const queueId = queueIdOf(
          await send(
            mxPort(server),
            box.address,
            rfc5322({ from: 'news@sender.example', to: box.address, subject: 'polled' }),
          ),
        );
        await waitFor(async () => (await queueRow(queueId!)) === undefined, 10_000, 'the other process to deliver');
        expect((await stored(box.mailboxId)).map((m) => m.subject)).toEqual(['polled']);
      } finally {
        await worker.close();
      }
    },
  );
});

describe('SMTP_INBOUND_QUEUE=false', () => {
  it('stores before the 250, as before queued intake', async () => {
    const direct = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server, SMTP_INBOUND_QUEUE: 'false' } });
    try {
      const d = await direct.createDomain();
      const box = await direct.createMailbox(d.token, `d@${d.name}`);
      expect(await send(mxPort(direct), box.address, rfc5322({ from: 'news@sender.example', to: box.address }))).toBe(
        '250 2.0.0 Delivered',
      );
      expect(
        await direct.runtime.services.db.rows(sql`select id from message where mailbox_id = ${box.mailboxId}`),
      ).toHaveLength(1);
    } finally {
      await direct.close();
    }
  });
});

describe('SMTP_INBOUND_DIRECT_BELOW=1', () => {
  it('stores a message before its 250 while nothing else is being stored here, and queues one that arrives meanwhile', async () => {
    const quiet = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server, SMTP_INBOUND_DIRECT_BELOW: '1' } });
    // A sender whose SPF question the name server holds: its delivery stays in flight until released.
    const gates: Array<() => void> = [];
    const slowSender = (name: string) => {
      dns.records[name] = {
        TXT: ['v=spf1 ip4:127.0.0.1 -all'],
        held: new Promise<void>((resolve) => gates.push(resolve)),
      };
      return {
        from: `a@${name}`,
        asked: () => waitFor(async () => dns.asked.has(name), 10_000, `${name}'s SPF question`),
      };
    };
    try {
      const d = await quiet.createDomain();
      const box = await quiet.createMailbox(d.token, `quiet@${d.name}`);
      const sendAs = (from: string, subject: string) =>
        send(mxPort(quiet), box.address, rfc5322({ from, to: box.address, subject }), from);
      const subjects = async () =>
        (await rowsOf(() => quiet)`select subject from message where mailbox_id = ${box.mailboxId}`)
          .map((m) => m.subject as string)
          .sort();

      expect(await sendAs('news@sender.example', 'alone')).toBe('250 2.0.0 Delivered');
      expect(await subjects()).toEqual(['alone']); // listed when its 250 came

      // While a direct delivery is in flight, new mail is queued.
      const direct = slowSender('slow1.sender.example');
      const held = sendAs(direct.from, 'held');
      await direct.asked();
      const worker = slowSender('slow2.sender.example');
      const queued = queueIdOf(await sendAs(worker.from, 'queued'));
      expect(queued).toMatch(/^inq_/);
      gates[0]!();
      expect(await held).toBe('250 2.0.0 Delivered');

      // While the worker stores a queued message, new mail is queued too.
      const stored = deliverQueued(quiet.runtime, queued);
      await worker.asked();
      const meanwhile = queueIdOf(await sendAs('news@sender.example', 'meanwhile'));
      expect(meanwhile).toMatch(/^inq_/);
      gates[1]!();
      await stored;
      await deliverQueued(quiet.runtime, meanwhile);
      expect(await subjects()).toEqual(['alone', 'held', 'meanwhile', 'queued']);
      // Idle again: direct.
      expect(await sendAs('news@sender.example', 'later')).toBe('250 2.0.0 Delivered');
    } finally {
      for (const open of gates) open();
      delete dns.records['slow1.sender.example'];
      delete dns.records['slow2.sender.example'];
      await quiet.close();
    }
  });
});
