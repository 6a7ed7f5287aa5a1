import { sql, type Database } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';

/**
 * What is left of a declared (resource-owned) ephemeral mailbox once swept: its row alone,
 * disabled at its end, so the resource stays ended instead of being re-created by the next
 * reconcile (core/resources/mailbox-converge.ts). Deleting the resource deletes it.
 */
const tombstone = sql`(resource_key is not null and coalesce(disabled_at = expires_at, false))`;

type Due = Row<'mailbox', 'id' | 'domain_id' | 'address' | 'local_part' | 'resource_key' | 'created_at' | 'expires_at'>;

/**
 * Deletes one ephemeral mailbox past its end (locked with SKIP LOCKED, so several workers share
 * the work) and everything it owns: its rows cascade from the mailbox row, and its storage figures
 * (the domain's are sums over its mailboxes) go with it; a declared one leaves its tombstone.
 * Answers the blob keys its messages and attachments named (for the caller to delete once no
 * other row names them), or null when no mailbox is due.
 */
export async function deleteOneExpiredMailbox(
  db: Database,
  now: Date,
): Promise<{ mailboxId: string; address: string; blobKeys: string[] } | null> {
  return db.tx(async (trx) => {
    const due = (
      await sql<Due>`select id, domain_id, address, local_part, resource_key, created_at, expires_at from mailbox
        where expires_at is not null and expires_at <= ${now} and not ${tombstone}
        order by expires_at limit 1 for update skip locked`.execute(trx)
    ).rows[0];
    if (!due) return null;
    const keys = await sql<{ key: string }>`select raw_blob_key as key from message
        where mailbox_id = ${due.id} and raw_blob_key is not null
      union select blob_key as key from attachment where mailbox_id = ${due.id}`.execute(trx);
    await sql`delete from mailbox where id = ${due.id}`.execute(trx);
    if (due.resource_key !== null)
      await sql`insert into mailbox (id, domain_id, address, local_part, resource_key, created_at, expires_at, disabled_at)
        values (${due.id}, ${due.domain_id}, ${due.address}, ${due.local_part}, ${due.resource_key}, ${due.created_at},
          ${due.expires_at}, ${due.expires_at})`.execute(trx);
    return { mailboxId: due.id, address: due.address, blobKeys: keys.rows.map((r) => r.key) };
  });
}
