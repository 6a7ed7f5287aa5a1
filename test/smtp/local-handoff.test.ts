import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';
import { deliverQueued } from '../support/intake-queue.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { mxPort, startSmtpTestServer } from './world.js';
import { IntakeQueueWorker, type IntakeQueue } from '../../src/core/flows/intake/intake-queue.worker.js';
import { InboundQueue } from '../../src/core/flows/inbound/inbound-queue.js';
import type { QueuedInbound } from '../../src/core/flows/inbound/inbound-queue.store.js';
import { silentLogger } from '../../src/core/base/logger.js';

// The hand-off between port 25's intake and the worker of the same process (LocalHandoff): while
// the worker has room, the queue row is written already claimed for it and stored without a claim;
// a busy worker leaves rows unclaimed for its claim; a row whose worker died is due at its lease's end.

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let x: { domainId: string; name: string; token: string };
const q = rowsOf(() => server);
let boxes = 0;
const newBox = () => server.createMailbox(x.token, `handoff${++boxes}@${x.name}`);
const queueRow = async (id: string) =>
  (await q`select locked_by, attempts, lease_until from inbound_queue where id = ${id}`)[0] as
    { locked_by: string | null; attempts: number; lease_until: unknown } | undefined;
const subjects = async (mailboxId: string) =>
  (await q`select subject from message where mailbox_id = ${mailboxId} order by subject`).map(
    (m: { subject: string }) => m.subject,
  );

/** One message to port 25; its queue id. */
async function send(to: string, subject: string): Promise<string> {
  const wire = await SmtpWire.connect(mxPort(server));
  await wire.cmd('EHLO peer.sender.example', 250);
  await wire.cmd('MAIL FROM:<news@sender.example>', 250);
  await wire.cmd(`RCPT TO:<${to}>`, 250);
  await wire.cmd('DATA', 354);
  const reply = await wire.cmd(`${rfc5322({ from: 'news@sender.example', to, subject })}\r\n.`, 250);
  await wire.cmd('QUIT', 221);
  return /Queued as (inq_\w+)$/.exec(reply.last)![1]!;
}

/**
 * The real port 25 queue whose stores wait for `open()`: a worker with messages in flight, held
 * there so the test can look at the rows meanwhile.
 */
function heldQueue() {
  const { db, transport } = server.runtime.services;
  const inner = new InboundQueue(db, transport.inbound, silentLogger);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const queue: IntakeQueue<QueuedInbound> = {
    route: inner.route,
    table: inner.table,
    handoff: inner.handoff,
    claim: (...a) => inner.claim(...a),
    release: (trx, row) => inner.release(trx, row),
    store: async (row) => {
      await gate;
      return inner.store(row);
    },
  };
  return { queue, open };
}

function worker(queue: IntakeQueue<QueuedInbound>, batch: number) {
  const { db, clock } = server.runtime.services;
  return new IntakeQueueWorker(db, queue, clock, silentLogger, {
    workerId: 'handoff-test',
    pollIntervalMs: 3_600_000, // never polls: what is stored came by hand-off or by the wake-up
    leaseMs: 60_000,
    batch,
    retry: { baseMs: 1_000, maxMs: 1_000 },
    maxAttempts: 3,
  });
}

beforeAll(async () => {
  dns = await startDnsStub({ 'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  server = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server } });
  x = await server.createDomain();
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('port 25 queue: the hand-off to the worker of the same process', () => {
  it('writes the row claimed for a worker with room, leaves the one past its room unclaimed, and stores both', async () => {
    const box = await newBox();
    const held = heldQueue();
    const w = worker(held.queue, 1);
    w.start();
    try {
      const first = await send(box.address, 'first');
      const second = await send(box.address, 'second');
      // The first went in as the worker's (attempts 1: its one try), the second waits for a claim.
      expect(await queueRow(first)).toMatchObject({ locked_by: 'handoff-test', attempts: 1 });
      expect((await queueRow(first))!.lease_until).not.toBeNull();
      expect(await queueRow(second)).toMatchObject({ locked_by: null, attempts: 0, lease_until: null });
      held.open();
      // The first store's end gives room: the worker claims the second at once (it never polls).
      await waitFor(async () => (await subjects(box.mailboxId)).length === 2, 10_000, 'both stored');
      expect(await subjects(box.mailboxId)).toEqual(['first', 'second']);
      expect(await queueRow(first)).toBeUndefined();
      expect(await queueRow(second)).toBeUndefined();
    } finally {
      await w.stop();
    }
  });

  it('stop waits for a handed-over message; a stopped worker takes no more', async () => {
    const box = await newBox();
    const held = heldQueue();
    const w = worker(held.queue, 4);
    w.start();
    const id = await send(box.address, 'in flight');
    expect(await queueRow(id)).toMatchObject({ locked_by: 'handoff-test' });
    let stopped = false;
    const stopping = w.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 200));
    expect(stopped).toBe(false);
    held.open();
    await stopping;
    expect(await subjects(box.mailboxId)).toEqual(['in flight']);
    // Detached: the next row goes in unclaimed, for any worker's claim.
    const after = await send(box.address, 'after stop');
    expect(await queueRow(after)).toMatchObject({ locked_by: null, attempts: 0 });
    await deliverQueued(server.runtime, after);
    expect(await subjects(box.mailboxId)).toEqual(['after stop', 'in flight']);
  });

  it('a row handed to a worker that died (committed, never stored) is claimed by another at its lease end', async () => {
    const box = await newBox();
    const { transport, clock } = server.runtime.services;
    // A worker killed between the commit and its store: it lent a claim and never took the row.
    const detach = transport.inbound.handoff.attach({
      reserve: () => ({ lockedBy: 'died', leaseUntil: new Date(clock.now().getTime() + 300) }),
      take: () => undefined,
      cancel: () => undefined,
      kick: () => undefined,
    });
    let id: string;
    try {
      id = await send(box.address, 'orphaned');
    } finally {
      detach();
    }
    expect(await queueRow(id)).toMatchObject({ locked_by: 'died', attempts: 1 });
    // Another worker's claim skips it while the lease holds, takes it after.
    await deliverQueued(server.runtime, id, 15_000);
    expect(await subjects(box.mailboxId)).toEqual(['orphaned']);
  });
});
