import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { ENGINE, startTestServer, type TestServer } from '../support/harness.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { rowsOf, sendBody, twoMailboxes, waitFor } from './helpers.js';
import { OutboxWorker } from '../../src/core/flows/outbound/outbox-worker.js';
import { claimDueJob } from '../../src/core/flows/outbound/outbox-job.store.js';
import { deliverMessage } from '../../src/core/flows/outbound/deliver-job.js';

// Only the api role: these tests run the workers themselves.
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ roles: ['api'] });
});
afterAll(async () => {
  await server?.close();
});
const q = rowsOf(() => server);

const worker = (workerId: string, extra: { leaseMs?: number; concurrency?: number } = {}) =>
  new OutboxWorker(server.runtime.services, {
    pollIntervalMs: 20,
    leaseMs: extra.leaseMs ?? 30_000,
    workerId,
    concurrency: extra.concurrency,
  });

async function pendingJobsDrained(): Promise<void> {
  await waitFor(
    async () => (await q`select count(*)::int as n from outbox_job where status = 'pending'`)[0].n === 0,
    20_000,
    'jobs drained',
  );
}

describe('OutboxWorker', () => {
  it('with two workers on one database, delivers each job exactly once', async () => {
    const { a, b } = await twoMailboxes(server);
    const api = server.api(a.token);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++)
      ids.push((await api.post('/api/messages/send', sendBody(b.address, { subject: `n${i}` }))).body.data.messageId);
    const workers = [worker('w1'), worker('w2')];
    workers.forEach((w) => w.start());
    try {
      await pendingJobsDrained();
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    const copies =
      await q`select subject, count(*)::int as n from message where mailbox_id = ${b.mailboxId} and direction = 'inbound' group by subject`;
    expect(copies).toHaveLength(12);
    expect(copies.every((c) => c.n === 1)).toBe(true);
    const recipients = await q`select status, attempts from message_recipient where message_id = any(${ids}::text[])`;
    expect(recipients.every((r) => r.status === 'delivered' && r.attempts === 1)).toBe(true);
    const jobs = await q`select status, attempts, locked_by from outbox_job where message_id = any(${ids}::text[])`;
    expect(jobs.every((j) => j.status === 'done' && j.attempts === 1)).toBe(true);
    const [mb] = await q`select inbound_count from mailbox where id = ${b.mailboxId}`;
    expect(Number(mb.inbound_count)).toBe(12);
  });

  it('delivers opposite directions concurrently without deadlocks (every job succeeds on its first attempt)', async () => {
    const { a, b } = await twoMailboxes(server);
    // Four jobs in flight per worker: all eight at once, half of them locking the mailboxes the other way.
    const workers = [worker('x1', { concurrency: 4 }), worker('x2', { concurrency: 4 })];
    workers.forEach((w) => w.start());
    try {
      const sends = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          i % 2 === 0
            ? server.api(a.token).post('/api/messages/send', sendBody(b.address, { subject: `ab${i}` }))
            : server.api(b.token).post('/api/messages/send', sendBody(a.address, { subject: `ba${i}` })),
        ),
      );
      expect(sends.map((s) => s.status)).toEqual(Array(8).fill(202));
      await pendingJobsDrained();
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    const jobs =
      await q`select attempts, last_error from outbox_job where mailbox_id = any(${[a.mailboxId, b.mailboxId]}::text[])`;
    expect(jobs).toHaveLength(8);
    expect(jobs.every((j) => j.attempts === 1 && j.last_error === null)).toBe(true);
  });

  // A second runtime is a second connection pool, as a second worker process would have.
  it.runIf(ENGINE === 'postgres')(
    'with a worker in a second runtime on the same PostgreSQL, still delivers each job exactly once',
    async () => {
      const { a, b } = await twoMailboxes(server);
      const api = server.api(a.token);
      for (let i = 0; i < 10; i++) await api.post('/api/messages/send', sendBody(b.address, { subject: `p${i}` }));
      const other = await startRuntime(
        loadConfig({
          DATABASE_URL: server.databaseUrl,
          MAILBOX_DATA_DIR: server.dataDir,
          MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
          WORKER_POLL_INTERVAL: '20ms',
          DATABASE_POOL_MAX: '2',
        }),
        { roles: ['worker'], log: silentLogger, skipMigrations: true },
      );
      const local = worker('local');
      local.start();
      try {
        await pendingJobsDrained();
      } finally {
        await local.stop();
        await other.close();
      }
      const copies =
        await q`select subject, count(*)::int as n from message where mailbox_id = ${b.mailboxId} and direction = 'inbound' group by subject`;
      expect(copies).toHaveLength(10);
      expect(copies.every((c) => c.n === 1)).toBe(true);
    },
  );

  it('never delivers a recipient twice, even when two deliveries of one message overlap', async () => {
    const { a, b } = await twoMailboxes(server);
    const sent = await server.api(a.token).post('/api/messages/send', sendBody(b.address));
    const { db, inbound } = server.runtime.services;
    // What an expired lease can cause: the old and the new owner working on one message at once.
    const outcomes = await Promise.all([
      deliverMessage(db, inbound, sent.body.data.messageId, new Date()),
      deliverMessage(db, inbound, sent.body.data.messageId, new Date()),
    ]);
    expect(outcomes.flatMap((o) => o.events).filter((e) => e.type === 'message.received')).toHaveLength(1);
    const [copies] =
      await q`select count(*)::int as n from message where mailbox_id = ${b.mailboxId} and direction = 'inbound'`;
    expect(copies.n).toBe(1);
    await q`delete from outbox_job where message_id = ${sent.body.data.messageId}`;
  });

  it('holds a lease against other workers and reclaims the job once the lease expires', async () => {
    const { a, b } = await twoMailboxes(server);
    const sent = await server.api(a.token).post('/api/messages/send', sendBody(b.address));
    const { db } = server.runtime.services;
    const crashed = await claimDueJob(db, 'crashed-worker', 1500, new Date());
    expect(crashed?.messageId).toBe(sent.body.data.messageId);
    expect(await claimDueJob(db, 'other', 30_000, new Date())).toBeUndefined();
    const w = worker('rescuer');
    w.start();
    try {
      const job = await waitFor(
        async () => (await q`select * from outbox_job where id = ${crashed!.id} and status = 'done'`)[0],
        10_000,
        'reclaimed job',
      );
      expect(job).toMatchObject({ locked_by: 'rescuer', attempts: 2, lease_until: null });
    } finally {
      await w.stop();
    }
    const [recipient] = await q`select status from message_recipient where message_id = ${sent.body.data.messageId}`;
    expect(recipient.status).toBe('delivered');
  });

  it('stops cleanly while idle and after work', async () => {
    const w = worker('idle');
    w.start();
    w.kick();
    await new Promise((r) => setTimeout(r, 50));
    await expect(w.stop()).resolves.toBeUndefined();
  });
});
