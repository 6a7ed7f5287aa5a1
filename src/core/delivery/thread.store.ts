import { sql, type Sql } from '../../storage/database.js';
import type { Row } from '../../storage/rows.js';

/** The messages of `mailboxId` carrying any of the msg-ids `ids`, oldest first. */
export async function messagesByInternetIds(
  trx: Sql,
  mailboxId: string,
  ids: readonly string[],
): Promise<(Row<'message', 'id' | 'thread_id'> & { internet_message_id: string })[]> {
  return (
    await sql<Row<'message', 'id' | 'thread_id'> & { internet_message_id: string }>`
    select id, thread_id, internet_message_id from message
    where mailbox_id = ${mailboxId} and internet_message_id = any(${[...ids]}::text[])
    order by created_at`.execute(trx)
  ).rows;
}

/** Opens a thread for a message that continues none. */
export async function createThread(
  trx: Sql,
  thread: { id: string; mailboxId: string; subject: string; at: Date },
): Promise<void> {
  await sql`insert into thread (id, mailbox_id, subject, created_at, last_message_at)
    values (${thread.id}, ${thread.mailboxId}, ${thread.subject}, ${thread.at}, ${thread.at})`.execute(trx);
}

/** Moves a thread's last activity forward (never back, for late-arriving messages). */
export async function touchThread(trx: Sql, threadId: string, at: Date): Promise<void> {
  await sql`update thread set last_message_at = greatest(last_message_at, ${at}) where id = ${threadId}`.execute(trx);
}
