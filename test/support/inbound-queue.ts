import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from '../../src/storage/database.js';
import { InboundQueueWorker } from '../../src/core/delivery/receiving/inbound-queue.worker.js';
import { silentLogger } from '../../src/core/logger.js';
import type { Runtime } from '../../src/runtime/runtime.js';

/**
 * Queued intake (docs/api.md): a 250 on port 25 means "in the inbound queue"; the worker stores
 * the message behind it. A test that reads right after the 250 first lets the queue be delivered,
 * by the production code (InboundQueueWorker.runOnce) run here, so the test needs no worker role
 * and no poll interval; a worker of the same process may take rows too (SKIP LOCKED).
 */
export async function deliverQueued(runtime: Runtime, queueId?: string, timeoutMs = 15_000): Promise<void> {
  const { db } = runtime.services;
  const worker = queueWorker(runtime);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await worker.runOnce();
    const rows = await db.rows(
      queueId
        ? sql<{
            status: string;
            last_error: string | null;
          }>`select status, last_error from inbound_queue where id = ${queueId}`
        : sql<{
            status: string;
            last_error: string | null;
          }>`select status, last_error from inbound_queue where status = 'pending'`,
    );
    if (rows.length === 0) return;
    const failed = rows.find((r) => r.status === 'failed');
    if (failed) throw new Error(`queued message ${queueId} failed: ${failed.last_error}`);
    if (Date.now() > deadline) throw new Error(`inbound queue not delivered after ${timeoutMs} ms`);
    await sleep(20); // held by another worker's lease
  }
}

/**
 * An InboundQueueWorker on `runtime`'s services that a test drives with `runOnce` (never started):
 * one attempt per claim, so a refusal shows at once as a `failed` row.
 */
export function queueWorker(runtime: Runtime): InboundQueueWorker {
  const { db, clock, transport } = runtime.services;
  return new InboundQueueWorker(db, transport.receiving, clock, silentLogger, {
    workerId: `test-drain:${process.pid}`,
    pollIntervalMs: 1_000,
    leaseMs: 30_000,
    batch: 32,
    retry: { baseMs: 1_000, maxMs: 1_000 },
    maxAttempts: 1,
  });
}

const byMxPort = new Map<number, Runtime>();

/** The harness registers each runtime with an MX listener, so `deliverToMx` can wait for delivery. */
export function registerMx(runtime: Runtime): () => void {
  const port = runtime.smtpPorts.mx;
  if (!port) return () => undefined;
  byMxPort.set(port, runtime);
  return () => byMxPort.delete(port);
}

/** After a 250 from `port`: the message is stored when this resolves (a no-op for direct delivery). */
export async function deliveredAfter(port: number, reply: string): Promise<void> {
  const queueId = /Queued as (inq_\S+)/.exec(reply)?.[1];
  const runtime = byMxPort.get(port);
  if (queueId && runtime) await deliverQueued(runtime, queueId);
}
