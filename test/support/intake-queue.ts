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
import { registry } from '../../src/telemetry/metric-registry.js';
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

/** Port 25's queue on `runtime`'s services, as the worker role drives it. */
export const inboundQueue = (runtime: Runtime): InboundQueue =>
  new InboundQueue(runtime.services.db, runtime.services.transport.inbound, silentLogger);

/** Port 587's queue on `runtime`'s services. */
export const submissionQueue = (runtime: Runtime): SubmissionQueue =>
  new SubmissionQueue(runtime.services.db, runtime.services.transport.submission, silentLogger);

/**
 * A worker of port 25's queue on `runtime`'s services that a test drives with `runOnce` (never
 * started): one attempt per claim, so a refusal shows at once as a `failed` row.
 */
export const queueWorker = (runtime: Runtime): IntakeQueueWorker<QueuedInbound> =>
  driven(runtime.services, inboundQueue(runtime));

/** The same for port 587's queue. */
export const submissionQueueWorker = (runtime: Runtime): IntakeQueueWorker<QueuedSubmission> =>
  driven(runtime.services, submissionQueue(runtime));

function driven<Q extends ClaimedRow>(s: Services, queue: IntakeQueue<Q>, options = DRIVEN) {
  return new IntakeQueueWorker(s.db, queue, s.clock, silentLogger, options);
}

/**
 * A started worker of `queue` in this process, as the worker role runs one: it takes the rows its
 * intake hands over (LocalHandoff) and claims what waits when it has room, but never polls, so
 * whatever it stores came by hand-off or by its own wake-up. `stop()` it at the end.
 */
export function localWorker<Q extends ClaimedRow>(
  runtime: Runtime,
  queue: IntakeQueue<Q>,
  o: { workerId: string; batch: number },
): IntakeQueueWorker<Q> {
  const worker = driven(runtime.services, queue, { ...DRIVEN, ...o, pollIntervalMs: 3_600_000, maxAttempts: 3 });
  worker.start();
  return worker;
}

/**
 * `inner` with stores that wait until `open()` (a worker with messages in flight, held there so a
 * test can look at the rows meanwhile; `held: false` lets them through, a predicate holds only the
 * rows it names) and the latest claim kept for the test to await (`claimed()`).
 */
export function heldQueue<Q extends ClaimedRow>(inner: IntakeQueue<Q>, held: boolean | ((row: Q) => boolean) = true) {
  let open = () => {};
  const gate = held ? new Promise<void>((resolve) => (open = resolve)) : Promise.resolve();
  const holds = typeof held === 'function' ? held : () => held;
  let lastClaim: Promise<unknown> = Promise.resolve();
  const queue: IntakeQueue<Q> = {
    route: inner.route,
    table: inner.table,
    handoff: inner.handoff,
    claim: (...a) => {
      const claim = inner.claim(...a);
      lastClaim = claim;
      return claim;
    },
    release: (trx, row) => inner.release(trx, row),
    store: async (row, committed) => {
      if (holds(row)) await gate;
      return inner.store(row, committed);
    },
  };
  return { queue, open: () => open(), claimed: () => lastClaim };
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

/** mailbox_delivery_outcomes_total{route="inbound", result} as this process's /metrics reports it. */
export async function inboundOutcomes(result: string): Promise<number> {
  const metric = await registry.getSingleMetric('mailbox_delivery_outcomes_total')!.get();
  return metric.values.find((v) => v.labels.route === 'inbound' && v.labels.result === result)?.value ?? 0;
}
