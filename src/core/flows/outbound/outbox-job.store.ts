import { sql, type Database } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';

export interface ClaimedJob {
  id: string;
  messageId: string;
  mailboxId: string;
  attempts: number;
  traceContext: string | null;
  leaseUntil: Date;
  /** A scheduled send not yet admitted: who scheduled it (the worker admits it first). */
  admit: { tokenId: string; channel: 'http' | 'mcp' | 'smtp' } | null;
}

/**
 * Claims the oldest due job for `workerId`. FOR UPDATE SKIP LOCKED lets many workers, in any
 * number of processes, poll the same table without blocking each other or taking the same
 * job. A job under a live lease is skipped; run_after keeps its place in the queue, so the job of
 * a worker that died is taken again the moment its lease expires, ahead of the work queued since
 * (not behind a backlog, as when the lease was written into run_after). The partial index on
 * pending jobs still serves the claim: the leased rows it skips are one per live worker.
 */
export async function claimDueJob(
  db: Database,
  workerId: string,
  leaseMs: number,
  now: Date,
): Promise<ClaimedJob | undefined> {
  const leaseUntil = new Date(now.getTime() + leaseMs);
  const row = await db.one(sql<
    Row<
      'outbox_job',
      'id' | 'message_id' | 'mailbox_id' | 'attempts' | 'trace_context' | 'admit_token_id' | 'admit_channel'
    >
  >`
    update outbox_job set lease_until = ${leaseUntil}, locked_by = ${workerId}, attempts = attempts + 1, updated_at = ${now}
    where id = (select id from outbox_job where status = 'pending' and run_after <= ${now} and (lease_until is null or lease_until <= ${now})
                order by run_after, id limit 1 for update skip locked)
    returning id, message_id, mailbox_id, attempts, trace_context, admit_token_id, admit_channel`);
  if (!row) return undefined;
  return {
    id: row.id,
    messageId: row.message_id,
    mailboxId: row.mailbox_id,
    attempts: Number(row.attempts),
    traceContext: row.trace_context,
    leaseUntil,
    admit:
      row.admit_channel === null
        ? null
        : { tokenId: row.admit_token_id ?? '', channel: row.admit_channel as 'http' | 'mcp' | 'smtp' },
  };
}

/**
 * Ends a job. Guarded by the lease: a worker that lost its job to another (lease expired) must
 * not overwrite that worker's outcome. Recipients are protected separately (row locks).
 */
export async function finishJob(db: Database, job: ClaimedJob, workerId: string, now: Date): Promise<void> {
  await db.rows(sql`update outbox_job set status = 'done', lease_until = null, last_error = null, updated_at = ${now}
    where id = ${job.id} and locked_by = ${workerId} and lease_until = ${job.leaseUntil}`);
}

/** Returns a job to the queue, due again at `runAfter`, with the reason visible in last_error. */
export async function postponeJob(
  db: Database,
  job: ClaimedJob,
  workerId: string,
  runAfter: Date,
  lastError: string,
  now: Date,
): Promise<void> {
  await db.rows(sql`update outbox_job set status = 'pending', lease_until = null, run_after = ${runAfter}, last_error = ${lastError.slice(0, 2000)},
    updated_at = ${now} where id = ${job.id} and locked_by = ${workerId} and lease_until = ${job.leaseUntil}`);
}
