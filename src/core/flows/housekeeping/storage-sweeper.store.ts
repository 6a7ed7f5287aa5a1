import { sql, type Database } from '../../../storage/database.js';
import type { Col } from '../../../storage/rows.js';
import type { DB } from '../../../storage/schema.js';

/** A column that names a blob. */
export interface BlobReference {
  table: keyof DB;
  column: string;
}

/**
 * Deletes up to `batch` unclaimed uploads created before `before` (locked with SKIP LOCKED, and
 * only while still unclaimed); the blob keys they named. An upload a draft holds is not
 * unclaimed: it waits for the draft's send or delete (docs/workflow.md, "Drafts").
 */
export async function deleteExpiredUploads(db: Database, before: Date, batch: number): Promise<string[]> {
  const rows = await db.rows(sql<{ blob_key: Col<'attachment', 'blob_key'> }>`
        delete from attachment where message_id is null and draft_id is null and id in (
          select id from attachment where message_id is null and draft_id is null and created_at < ${before}
          order by created_at limit ${batch} for update skip locked)
        returning blob_key`);
  return rows.map((r) => r.blob_key);
}

/** The keys among `keys` no column of `references` names (one indexed lookup per key and column). */
export async function unreferencedKeys(
  db: Database,
  keys: readonly string[],
  references: readonly BlobReference[],
): Promise<string[]> {
  if (keys.length === 0) return [];
  const unnamed = references.map(
    (r) => sql`not exists (select 1 from ${sql.table(r.table)} where ${sql.ref(r.column)} = k.key)`,
  );
  const rows = await db.rows(sql<{ key: string }>`
      select k.key from unnest(${[...keys]}::text[]) as k(key) where ${sql.join(unnamed, sql` and `)}`);
  return rows.map((r) => r.key);
}
