import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';
import {
  deliverQueued,
  heldQueue,
  inboundOutcomes,
  inboundQueue,
  localWorker,
  queueWorker,
  submissionQueue,
} from '../support/intake-queue.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { rfc5322 } from './smtp-wire.js';
import { loggedInWire, mxPort, sendToMx, startSmtpTestServer } from './world.js';
import { sql } from '../../src/storage/database.js';
import { setTimeout as sleep } from 'node:timers/promises';

// The hand-off between an SMTP intake and the worker of the same process (LocalHandoff): while
// the worker has room, the queue row is written already claimed for it and stored without a claim;
// a busy worker leaves rows unclaimed for its claim; a row whose worker died is due at its lease's end.

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let x: { domainId: string; name: string; token: string };
const q = rowsOf(() => server);
let boxes = 0;
const newBox = () => server.createMailbox(x.token, `handoff${++boxes}@${x.name}`);
const queueRow = async (id: string, table: 'inbound_queue' | 'submission_queue' = 'inbound_queue') =>
  (await q`select locked_by, attempts, lease_until from ${sql.table(table)} where id = ${id}`)[0] as
    { locked_by: string | null; attempts: number; lease_until: unknown } | undefined;
const subjects = async (mailboxId: string) =>
  (await q`select subject from message where mailbox_id = ${mailboxId} order by subject`).map(
    (m: { subject: string }) => m.subject,
  );

/** One message to port 25; its queue id. */
async function send(to: string, subject: string): Promise<string> {
  const reply = await sendToMx(mxPort(server), to, rfc5322({ from: 'news@sender.example', to, subject }));
  return /^250 .*Queued as (inq_\w+)$/.exec(reply)![1]!;
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
    const held = heldQueue(inboundQueue(server.runtime));
    const w = localWorker(server.runtime, held.queue, { workerId: 'handoff-test', batch: 1 });
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
    const held = heldQueue(inboundQueue(server.runtime));
    const w = localWorker(server.runtime, held.queue, { workerId: 'handoff-test', batch: 4 });
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

describe('port 25 queue: handed over during its commit', () => {
  it('the worker is handed the row while it commits and writes the message only after', async () => {
    const box = await newBox();
    const { transport } = server.runtime.services;
    // The row is in the database, but the intake hears of its commit 300 ms later: the worker,
    // handed the row at once, must not have written the message by then.
    const storedBeforeTheAnswer: string[] = [];
    const w = localWorker(server.runtime, inboundQueue(server.runtime), { workerId: 'overlap-test', batch: 32 });
    const real = transport.inbound.handoff;
    const write = real.write.bind(real);
    real.write = (commit, asClaimed) =>
      write(async (claim) => {
        await commit(claim);
        await sleep(300);
        storedBeforeTheAnswer.push(...(await subjects(box.mailboxId)));
      }, asClaimed);
    try {
      await send(box.address, 'overlapped');
      expect(storedBeforeTheAnswer).toEqual([]);
      await waitFor(async () => (await subjects(box.mailboxId)).length === 1, 10_000, 'stored');
      expect(await subjects(box.mailboxId)).toEqual(['overlapped']);
    } finally {
      real.write = write;
      await w.stop();
    }
  });

  it('a row whose commit fails is given back by the worker: nothing stored twice, nothing set aside', async () => {
    const box = await newBox();
    // Room for the message but not for its reservation (2 × size + 8 KiB): the queue row's INSERT
    // fails, the worker it was handed to gives its place back, and the direct path stores it once.
    await q`update mailbox set storage_quota_bytes = 12000 where id = ${box.mailboxId}`;
    const w = localWorker(server.runtime, inboundQueue(server.runtime), { workerId: 'refused-test', batch: 1 });
    const recorded0 = [await inboundOutcomes('failed'), await inboundOutcomes('deferred')];
    try {
      const reply = await sendToMx(
        mxPort(server),
        box.address,
        rfc5322({ from: 'news@sender.example', to: box.address, subject: 'direct', body: 'y'.repeat(4000) }),
      );
      expect(reply).toMatch(/^250 2\.0\.0 Delivered/);
      expect(await subjects(box.mailboxId)).toEqual(['direct']);
      expect(await q`select id from inbound_queue where status = 'failed'`).toHaveLength(0);
      // The worker recorded nothing for the row that never was: no failure, no retry.
      expect([await inboundOutcomes('failed'), await inboundOutcomes('deferred')]).toEqual(recorded0);
      // Its place is free again: the next message is handed over (written claimed) and stored.
      await q`update mailbox set storage_quota_bytes = null where id = ${box.mailboxId}`;
      const next = await send(box.address, 'next');
      const row = await queueRow(next); // written claimed for the worker, or already stored by it
      expect(row === undefined || row.locked_by === 'refused-test').toBe(true);
      await waitFor(async () => (await subjects(box.mailboxId)).length === 2, 10_000, 'next stored');
    } finally {
      await w.stop();
    }
  });
});

describe("port 25 queue: the worker's batch", () => {
  it('stays full: a slow message holds only its own place while the backlog behind it is stored', async () => {
    const box = await newBox();
    // Queued while no worker of this process runs: a backlog of unclaimed rows, the first one slow.
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await send(box.address, `backlog ${String(i).padStart(2, '0')}`));
    const held = heldQueue(inboundQueue(server.runtime), (row) => row.id === ids[0]);
    const w = localWorker(server.runtime, held.queue, { workerId: 'batch-test', batch: 4 });
    try {
      // A batch that waited for its slowest message would stop at the three claimed beside it.
      await waitFor(async () => (await subjects(box.mailboxId)).length === 9, 10_000, 'the other nine stored');
      expect(await queueRow(ids[0]!)).toMatchObject({ locked_by: 'batch-test', attempts: 1 });
      held.open();
      await waitFor(async () => (await subjects(box.mailboxId)).length === 10, 10_000, 'the slow one stored');
      expect(await subjects(box.mailboxId)).toEqual(ids.map((_, i) => `backlog ${String(i).padStart(2, '0')}`));
    } finally {
      held.open();
      await w.stop();
    }
  });

  it('drain stores a backlog with the batch kept full and returns how many it stored', async () => {
    const box = await newBox();
    for (let i = 0; i < 7; i++) await send(box.address, `drained ${i}`);
    const w = queueWorker(server.runtime);
    expect(await w.drain()).toBe(7);
    expect(await subjects(box.mailboxId)).toHaveLength(7);
    expect(await w.drain()).toBe(0);
  });
});

describe('port 587 queue: the same hand-off', () => {
  it('writes the row claimed for the worker with room and the worker writes the message under the 250 id', async () => {
    const box = await newBox();
    const held = heldQueue(submissionQueue(server.runtime));
    const w = localWorker(server.runtime, held.queue, { workerId: 'handoff-587', batch: 4 });
    try {
      const wire = await loggedInWire(server, box);
      wire.awaitQueued = false; // the test looks at the row itself
      await wire.cmd(`MAIL FROM:<${box.address}>`, 250);
      await wire.cmd('RCPT TO:<someone@remote.example>', 250);
      await wire.cmd('DATA', 354);
      const reply = await wire.cmd(
        `${rfc5322({ from: box.address, to: 'someone@remote.example', subject: 'handed over' })}\r\n.`,
        250,
      );
      await wire.cmd('QUIT', 221);
      const id = /Queued as (msg_\w+)$/.exec(reply.last)![1]!;
      expect(await queueRow(id, 'submission_queue')).toMatchObject({ locked_by: 'handoff-587', attempts: 1 });
      held.open();
      await waitFor(async () => (await queueRow(id, 'submission_queue')) === undefined, 10_000, 'the write');
      expect((await q`select id, subject from message where id = ${id}`)[0]).toMatchObject({ subject: 'handed over' });
    } finally {
      await w.stop();
    }
  });
});
