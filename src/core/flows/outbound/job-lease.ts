import type { Database } from '../../../storage/database.js';
import type { ClaimedJob } from './outbox-job.store.js';
import { extendLease } from './delivery.store.js';

/**
 * Extends the lease of a job this worker still holds (a long SMTP conversation must not let it
 * expire and another worker start the same deliveries). False when the lease was lost: another
 * worker owns the job now, and this one must stop before sending anything more.
 */
export async function renewLease(
  db: Database,
  job: ClaimedJob,
  workerId: string,
  leaseMs: number,
  now: Date,
): Promise<boolean> {
  const until = new Date(now.getTime() + leaseMs);
  if (!(await extendLease(db, job, workerId, until, now))) return false;
  job.leaseUntil = until;
  return true;
}

/** What a delivery needs to know about the lease it runs under. */
export interface LeaseGuard {
  /** Aborted when a renewal failed: stop the SMTP conversation in flight. */
  signal: AbortSignal;
  /** Renews now; false when the lease is gone. */
  stillHeld(): Promise<boolean>;
}

/** Renews the job's lease every third of its length while `fn` runs. */
export async function withLease<T>(
  db: Database,
  job: ClaimedJob,
  workerId: string,
  leaseMs: number,
  now: () => Date,
  fn: (lease: LeaseGuard) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const renew = async () => {
    const held = await renewLease(db, job, workerId, leaseMs, now()).catch(() => false);
    if (!held) controller.abort();
    return held;
  };
  const timer = setInterval(() => void renew(), Math.max(50, Math.floor(leaseMs / 3)));
  try {
    return await fn({ signal: controller.signal, stillHeld: async () => !controller.signal.aborted && renew() });
  } finally {
    clearInterval(timer);
  }
}
