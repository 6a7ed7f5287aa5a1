import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from '../../src/storage/database.js';
import { IntakeQueueWorker, type IntakeQueue } from '../../src/core/flows/intake/intake-queue.worker.js';
import type { ClaimedRow } from '../../src/core/flows/intake/intake-queue.store.js';
import type { Services } from '../../src/core/services.js';
import type { QueuedInbound } from '../../src/core/flows/inbound/inbound-queue.store.js';
import type { QueuedSubmission } from '../../src/core/flows/submission/submission-queue.store.js';
import { InboundQueue } from '../../src/core/flows/inbound/inbound-queue.js';
import { SubmissionQueue } from '../../src/core/flows/submission/submission-queue.js';
import { silentLogger } from '../../src/core/base/logger.js';
import type { Runtime } from '../../src/runtime/runtime.js';

/**
 * Queued intake (docs/api.md): a 250 on port 25 or 587 means "in the queue"; the worker stores the
 * message behind it. A test that reads right after the 250 first lets the queue be stored, by the
 * production code (IntakeQueueWorker.runOnce) run here, so the test needs no worker role and no
 * poll interval; a worker of the same process may take rows too (SKIP LOCKED).
 */
export async function deliverQueued(runtime: Runtime, queueId?: string, timeoutMs = 15_000): Promise<void> {
  await drain(runtime, 'inbound_queue', queueWorker(runtime), queueId, timeoutMs);
}

/** As deliverQueued, for port 587's queue: `messageId` (the 250's) or every pending row is written when this resolves. */
export async function writeQueuedSubmissions(runtime: Runtime, messageId?: string, timeoutMs = 15_000): Promise<void> {
  await drain(runtime, 'submission_queue', submissionQueueWorker(runtime), messageId, timeoutMs);
}

async function drain(
  runtime: Runtime,
  table: 'inbound_queue' | 'submission_queue',
  worker: { runOnce(): Promise<number> },
  id: string | undefined,
  timeoutMs: number,
): Promise<void> {
  const { db } = runtime.services;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await worker.runOnce();
    const rows = await db.rows(
      sql<{ status: string; last_error: string | null }>`select status, last_error from ${sql.table(table)}
        where ${id ? sql`id = ${id}` : sql`status = 'pending'`}`,
    );
    if (rows.length === 0) return;
    const failed = rows.find((r) => r.status === 'failed');
    if (failed) throw new Error(`queued message ${id} failed: ${failed.last_error}`);
    if (Date.now() > deadline) throw new Error(`${table} not stored after ${timeoutMs} ms`);
    await sleep(20); // held by another worker's lease
  }
}

const DRIVEN = {
  workerId: `test-drain:${process.pid}`,
  pollIntervalMs: 1_000,
  leaseMs: 30_000,
  batch: 32,
  retry: { baseMs: 1_000, maxMs: 1_000 },
  maxAttempts: 1,
};

/**
 * A worker of port 25's queue on `runtime`'s services that a test drives with `runOnce` (never
 * started): one attempt per claim, so a refusal shows at once as a `failed` row.
 */
export const queueWorker = (runtime: Runtime): IntakeQueueWorker<QueuedInbound> =>
  driven(runtime, (s) => new InboundQueue(s.db, s.transport.inbound, silentLogger));

/** The same for port 587's queue. */
export const submissionQueueWorker = (runtime: Runtime): IntakeQueueWorker<QueuedSubmission> =>
  driven(runtime, (s) => new SubmissionQueue(s.db, s.transport.submission, silentLogger));

function driven<Q extends ClaimedRow>(runtime: Runtime, queueOf: (s: Services) => IntakeQueue<Q>) {
  const s = runtime.services;
  return new IntakeQueueWorker(s.db, queueOf(s), s.clock, silentLogger, DRIVEN);
}

const byPort = new Map<number, Runtime>();

/** The harness registers each runtime with SMTP listeners, so `deliveredAfter` can wait for the message. */
export function registerSmtp(runtime: Runtime): () => void {
  const ports = [runtime.smtpPorts.mx, runtime.smtpPorts.submission].filter((p): p is number => !!p);
  for (const port of ports) byPort.set(port, runtime);
  return () => ports.forEach((p) => byPort.delete(p));
}

/**
 * After a 250 from `port`: the message is stored when this resolves (a no-op for direct delivery).
 * Port 25's names its queue row (`inq_…`), port 587's the message id its queue row carries.
 */
export async function deliveredAfter(port: number, reply: string): Promise<void> {
  const runtime = byPort.get(port);
  if (!runtime) return;
  const inbound = /Queued as (inq_\S+)/.exec(reply)?.[1];
  if (inbound) return deliverQueued(runtime, inbound);
  const submitted = /(?:Queued|Held for approval) as (msg_\S+)/.exec(reply)?.[1];
  if (submitted && port === runtime.smtpPorts.submission) await writeQueuedSubmissions(runtime, submitted);
}
