import { sql, type Database } from '../../storage/database.js';
import type { Row } from '../../storage/rows.js';

/**
 * Deletes one ephemeral mailbox past its end (locked with SKIP LOCKED, so several workers share
 * the work) and everything it owns: its rows cascade from the mailbox row, and its storage figures
 * (the domain's are sums over its mailboxes) go with it. Answers the blob keys its messages and
 * attachments named (for the caller to delete once no other row names them), or null when no
 * mailbox is due.
 */
export async function deleteOneExpiredMailbox(
  db: Database,
  now: Date,
): Promise<{ mailboxId: string; address: string; blobKeys: string[] } | null> {
  return db.tx(async (trx) => {
    const due = (
      await sql<Row<'mailbox', 'id' | 'address'>>`select id, address from mailbox
        where expires_at is not null and expires_at <= ${now}
        order by expires_at limit 1 for update skip locked`.execute(trx)
    ).rows[0];
    if (!due) return null;
    const keys = await sql<{ key: string }>`select raw_blob_key as key from message
        where mailbox_id = ${due.id} and raw_blob_key is not null
      union select blob_key as key from attachment where mailbox_id = ${due.id}`.execute(trx);
    await sql`delete from mailbox where id = ${due.id}`.execute(trx);
    return { mailboxId: due.id, address: due.address, blobKeys: keys.rows.map((r) => r.key) };
  });
}
