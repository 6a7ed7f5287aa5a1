import { sql, type Database, type Sql, type WriteTxOptions } from '../../../storage/database.js';

/**
 * The rows of an SMTP intake queue (docs/api.md, "Queued intake"): port 25's `inbound_queue` and
 * port 587's `submission_queue` share how rows are claimed, leased, finished and set aside; only
 * what a row carries differs. A row is `pending` until the transaction that stores its message
 * deletes it, or `failed` (kept for an operator) when it can never be stored.
 */
export type IntakeQueueTable = 'inbound_queue' | 'submission_queue';

/**
 * How a queue row is written at intake: it is one statement that fails on its own (its quota
 * reservation included, insertReserving), so its COMMIT travels with it: the 250 waits for one
 * round trip (Database.writeTx).
 */
export const COMMIT_WITH_QUEUE_ROW: WriteTxOptions = { commitWithStatements: true };

/** A row as a worker claimed it: only the worker holding the claim may finish, postpone or fail it. */
export interface ClaimedRow {
  id: string;
  attempts: number;
  lockedBy: string;
  leaseUntil: Date;
}

/** Thrown inside a storing transaction whose queue row is no longer this worker's: roll back. */
export class QueueClaimLost extends Error {
  constructor(id: string) {
    super(`queued message ${id} is no longer claimed by this worker`);
  }
}

/**
 * A row handed to the worker while its commit was in flight (LocalHandoff), whose commit failed:
 * it never was the worker's, so, as after a lost claim, nothing is stored or recorded (the intake
 * answered the error).
 */
export class QueueRowNotWritten extends QueueClaimLost {
  constructor(id: string, cause: unknown) {
    super(id);
    this.message = `queued message ${id} was never written: its commit failed`;
    this.cause = cause;
  }
}

/**
 * Claims up to `limit` due rows of `table` for `lockedBy` under a lease (FOR UPDATE SKIP LOCKED,
 * like outbox jobs): a row whose worker died is due again when its lease expires. Returns the
 * `columns` asked for (and `attempts`), in id order.
 */
export async function claimQueued<R extends { id: string; attempts: number }>(
  db: Database,
  table: IntakeQueueTable,
  columns: readonly string[],
  claim: { lockedBy: string; limit: number; leaseMs: number; now: Date },
): Promise<{ rows: R[]; leaseUntil: Date }> {
  const { lockedBy, limit, now } = claim;
  const leaseUntil = new Date(now.getTime() + claim.leaseMs);
  const returning = sql.join([...new Set(['id', 'attempts', ...columns])].map((c) => sql.ref(c)));
  const rows = await db.rows(sql<R>`update ${sql.table(table)} set lease_until = ${leaseUntil}, locked_by = ${lockedBy},
      attempts = attempts + 1
    where id in (select id from ${sql.table(table)} where status = 'pending' and run_after <= ${now}
                 and (lease_until is null or lease_until <= ${now})
                 order by run_after, id limit ${limit} for update skip locked)
    returning ${returning}`);
  return { rows: rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)), leaseUntil };
}

/** The condition that `q` is still this worker's claim. */
const stillClaimed = (q: ClaimedRow) =>
  sql`id = ${q.id} and locked_by = ${q.lockedBy} and lease_until = ${q.leaseUntil}`;

/**
 * Removes the row inside the transaction that stores its message, so a message is stored exactly
 * once: a worker whose lease another worker took over finds no row and rolls back.
 */
export async function removeStored(trx: Sql, table: IntakeQueueTable, q: ClaimedRow): Promise<void> {
  const deleted = await sql`delete from ${sql.table(table)} where ${stillClaimed(q)}`.execute(trx);
  if (Number(deleted.numAffectedRows ?? 0) !== 1) throw new QueueClaimLost(q.id);
}

/** Returns a row to the queue, due again at `runAfter`, with the reason kept in last_error. */
export async function postponeQueued(
  db: Database,
  table: IntakeQueueTable,
  q: ClaimedRow,
  runAfter: Date,
  lastError: string,
): Promise<void> {
  await db.rows(sql`update ${sql.table(table)} set lease_until = null, run_after = ${runAfter},
    last_error = ${lastError.slice(0, 2000)} where ${stillClaimed(q)}`);
}

/**
 * Sets a pending row aside as `failed` with its reason (kept for an operator) and, in the same
 * transaction, gives back what it reserved at intake (`giveBack`); nothing when it is no longer
 * this worker's row.
 */
export async function failQueued(
  db: Database,
  table: IntakeQueueTable,
  q: ClaimedRow,
  reason: string,
  giveBack: (trx: Sql) => Promise<void>,
): Promise<void> {
  await db.writeTx(async (trx) => {
    const updated = await sql`update ${sql.table(table)} set status = 'failed', lease_until = null,
      last_error = ${reason.slice(0, 2000)} where ${stillClaimed(q)} and status = 'pending'`.execute(trx);
    if (Number(updated.numAffectedRows ?? 0) === 1) await giveBack(trx);
  });
}

/** Deletes a row with nothing left to store (every mailbox it was for is gone). */
export async function dropQueued(db: Database, table: IntakeQueueTable, q: ClaimedRow): Promise<void> {
  await db.rows(sql`delete from ${sql.table(table)} where ${stillClaimed(q)}`);
}

/**
 * The rows of `table` still waiting to be stored (pending, claimed or not), counted up to `cap`:
 * past the high water the exact number does not matter, and the count stays an index scan of at
 * most `cap` entries (the queue's partial index on pending rows).
 */
export const pendingRows = (db: Database, table: IntakeQueueTable, cap: number) => async (): Promise<number> => {
  const row = await db.one(sql<{ n: number }>`select count(*)::int as n
    from (select 1 from ${sql.table(table)} where status = 'pending' limit ${cap}) waiting`);
  return row?.n ?? 0;
};
