import { sql, type Database } from '../../../storage/database.js';

/** A mailbox's event sequence (bumped in the transaction of every change to its mail); null when gone. */
export async function changeSequenceOfMailbox(db: Database, mailboxId: string): Promise<number | null> {
  const row = await db.one(sql<{ event_seq: string | number }>`select event_seq from mailbox where id = ${mailboxId}`);
  return row ? Number(row.event_seq) : null;
}

/**
 * The sequences of every enabled mailbox of a domain, as one digest: what a domain token reading
 * by id without a mailbox address can see. It changes when any of them changes, and when a mailbox
 * is enabled, disabled, created or removed (its id enters or leaves the list).
 */
export async function changeSequenceOfDomain(db: Database, domainId: string): Promise<string> {
  const row = await db.one(sql<{
    digest: string | null;
  }>`select md5(string_agg(id || ':' || event_seq, ',' order by id))
      as digest from mailbox where domain_id = ${domainId} and disabled_at is null`);
  return row?.digest ?? 'none';
}
