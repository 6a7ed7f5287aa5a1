import { sql, type Database } from '../../../../storage/database.js';
import type { Narrow, Row } from '../../../../storage/rows.js';

export type TextRow = Narrow<
  Row<
    'attachment_text',
    'status' | 'text' | 'truncated' | 'error_code' | 'error_detail' | 'failure_reason' | 'deadline_at' | 'created_at'
  >,
  { status: 'extracting' | 'ok' | 'failed' }
>;
export type SettledText = TextRow & { status: 'ok' | 'failed' };

export async function cachedText(db: Database, attachmentId: string): Promise<TextRow | undefined> {
  return db.one(sql<TextRow>`select status, text, truncated, error_code, error_detail, failure_reason, deadline_at, created_at
    from attachment_text where attachment_id = ${attachmentId}`);
}

/**
 * The claim, written and committed before the extractor starts: true for the one caller that
 * wrote it (another request or replica that claimed first wins, and this one waits for its row).
 */
export async function claimText(db: Database, attachmentId: string, at: Date, deadline: Date): Promise<boolean> {
  const row = await db.one(sql<{
    attachment_id: string;
  }>`insert into attachment_text (attachment_id, status, created_at, deadline_at)
    values (${attachmentId}, 'extracting', ${at}, ${deadline})
    on conflict (attachment_id) do nothing returning attachment_id`);
  return row !== undefined;
}

/** The outcome replaces the claim (or a claim found expired meanwhile: the real result wins). */
export async function settleText(
  db: Database,
  attachmentId: string,
  row: Pick<TextRow, 'text' | 'truncated' | 'error_code' | 'error_detail' | 'failure_reason'> & {
    status: 'ok' | 'failed';
  },
  at: Date,
): Promise<void> {
  await db.one(sql`update attachment_text set status = ${row.status}, text = ${row.text}, truncated = ${row.truncated},
    error_code = ${row.error_code}, error_detail = ${row.error_detail}, failure_reason = ${row.failure_reason},
    deadline_at = null, created_at = ${at}
    where attachment_id = ${attachmentId} and status <> 'ok'`);
}

/**
 * A claim past its deadline: the process extracting it ended without an outcome (killed for its
 * memory, crashed). It is recorded failed, never run again, so one file cannot kill a replica on
 * every retry.
 */
export async function failExpiredClaim(db: Database, attachmentId: string, now: Date): Promise<void> {
  await db.one(sql`update attachment_text set status = 'failed', error_code = 'ATTACHMENT_TEXT_FAILED',
    failure_reason = 'interrupted',
    error_detail = 'the extraction ended without a result (the process running it stopped); it is not retried',
    deadline_at = null, created_at = ${now}
    where attachment_id = ${attachmentId} and status = 'extracting' and deadline_at <= ${now}`);
}

/** Gives a claim back without an outcome (the bytes could not be read): a later read tries again. */
export async function releaseClaim(db: Database, attachmentId: string): Promise<void> {
  await db.one(sql`delete from attachment_text where attachment_id = ${attachmentId} and status = 'extracting'`);
}
