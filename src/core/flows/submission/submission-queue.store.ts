import { jsonValue, sql, type Database, type Sql } from '../../../storage/database.js';
import { insertReserving } from '../../state/quota/storage-quota.store.js';
import type { PolicyVerdict } from '../policy/outbound-policy.js';
import type { MailboxRef } from '../../access/principal.js';
import { claimQueued, type ClaimedRow } from '../intake/intake-queue.store.js';
import type { HandoffClaim } from '../intake/local-handoff.js';

/** A message admitted on port 587 before its 250, to be written by the worker. */
export interface SubmissionRow {
  /** The message id the 250 named. */
  id: string;
  receivedAt: Date;
  /** The sending mailbox as the session read it at AUTH. */
  mailbox: MailboxRef;
  tokenId: string;
  mailFrom: string;
  /** The envelope recipients, normalized. */
  recipients: string[];
  verdict: PolicyVerdict;
  traceContext: string | null;
  /** Reserved in the mailbox at intake (0 where it has no quota). */
  reservedBytes: number;
  raw: Buffer;
}

/** A queued submission as a worker claimed it. */
export type QueuedSubmission = SubmissionRow & ClaimedRow;

/**
 * Writes the queue row of an admitted submission (the 250 follows its commit), reserving
 * `reservedBytes` in the sender's mailbox when it has a quota, in one statement that fails on its
 * own (insertReserving), so it commits in the batch that carries it. A reservation that does not
 * fit is QUOTA_EXCEEDED; the write settles it against the stored size. With `claim` the row is
 * written claimed for this process's worker (LocalHandoff).
 */
export async function enqueueSubmission(
  trx: Sql,
  row: SubmissionRow,
  claim: HandoffClaim | null = null,
): Promise<void> {
  await insertReserving(
    trx,
    row.reservedBytes > 0 ? [row.mailbox.id] : [],
    row.reservedBytes,
    (reservedBytes) => sql`insert into submission_queue (id, status, received_at, mailbox, token_id, mail_from,
        recipients, verdict, trace_context, reserved_bytes, raw, attempts, run_after, locked_by, lease_until)
      values (${row.id}, 'pending', ${row.receivedAt}, ${JSON.stringify(row.mailbox)}::jsonb, ${row.tokenId}, ${row.mailFrom},
        ${JSON.stringify(row.recipients)}::jsonb, ${JSON.stringify(row.verdict)}::jsonb, ${row.traceContext},
        ${reservedBytes}, ${row.raw}, ${claim ? 1 : 0}, ${row.receivedAt}, ${claim?.lockedBy ?? null}, ${claim?.leaseUntil ?? null})`,
  );
}

interface SubmissionQueueRow {
  id: string;
  attempts: number;
  received_at: unknown;
  mailbox: unknown;
  token_id: string;
  mail_from: string;
  recipients: unknown;
  verdict: unknown;
  trace_context: string | null;
  reserved_bytes: unknown;
  raw: Buffer | Uint8Array;
}

const COLUMNS = [
  'received_at',
  'mailbox',
  'token_id',
  'mail_from',
  'recipients',
  'verdict',
  'trace_context',
  'reserved_bytes',
  'raw',
];

/** Claims up to `limit` due rows for `lockedBy` under a lease (see claimQueued). */
export async function claimSubmissions(
  db: Database,
  lockedBy: string,
  limit: number,
  leaseMs: number,
  now: Date,
): Promise<QueuedSubmission[]> {
  const claimed = await claimQueued<SubmissionQueueRow>(db, 'submission_queue', COLUMNS, {
    lockedBy,
    limit,
    leaseMs,
    now,
  });
  return claimed.rows.map((r) => ({
    id: r.id,
    receivedAt: new Date(r.received_at as string),
    mailbox: jsonValue(r.mailbox) as MailboxRef,
    tokenId: r.token_id,
    mailFrom: r.mail_from,
    recipients: jsonValue(r.recipients) as string[],
    verdict: jsonValue(r.verdict) as PolicyVerdict,
    traceContext: r.trace_context,
    reservedBytes: Number(r.reserved_bytes),
    raw: Buffer.isBuffer(r.raw) ? r.raw : Buffer.from(r.raw),
    attempts: Number(r.attempts),
    lockedBy,
    leaseUntil: claimed.leaseUntil,
  }));
}

/** Whether the row's mailbox still exists (one deleted while it waited has nothing to take the message). */
export async function mailboxExists(db: Database, q: QueuedSubmission): Promise<boolean> {
  return (await db.rows(sql`select 1 from mailbox where id = ${q.mailbox.id}`)).length > 0;
}
