import { sql, type Database } from '../../../storage/database.js';
import type { Narrow, Row } from '../../../storage/rows.js';

export type CachedText = Narrow<
  Row<'attachment_text', 'status' | 'text' | 'truncated' | 'error_code' | 'error_detail' | 'created_at'>,
  { status: 'ok' | 'failed' }
>;

export async function cachedText(db: Database, attachmentId: string): Promise<CachedText | undefined> {
  return db.one(sql<CachedText>`select status, text, truncated, error_code, error_detail, created_at
    from attachment_text where attachment_id = ${attachmentId}`);
}

/** The first result wins: two requests extracting the same file at once store one row. */
export async function storeText(
  db: Database,
  attachmentId: string,
  row: Omit<CachedText, 'created_at'>,
  at: Date,
): Promise<void> {
  await db.one(sql`insert into attachment_text (attachment_id, status, text, truncated, error_code, error_detail, created_at)
    values (${attachmentId}, ${row.status}, ${row.text}, ${row.truncated}, ${row.error_code}, ${row.error_detail}, ${at})
    on conflict (attachment_id) do nothing`);
}
