import { hotRow, sql, type Sql } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';

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

/**
 * Opens a thread for a message that continues none. Its workflow state follows the message
 * (docs/workflow.md, "Thread state"): a sent one awaits a reply, a received one is open.
 */
export async function createThread(
  trx: Sql,
  thread: { id: string; mailboxId: string; subject: string; at: Date; direction: 'inbound' | 'outbound' },
): Promise<void> {
  const outbound = thread.direction === 'outbound';
  await sql`insert into thread (id, mailbox_id, subject, created_at, last_message_at, state, awaiting_reply_since)
    values (${thread.id}, ${thread.mailboxId}, ${thread.subject}, ${thread.at}, ${thread.at},
      ${outbound ? 'awaiting_reply' : 'open'}, ${outbound ? thread.at : null})`.execute(trx);
}

/**
 * A message joins a thread: its last activity moves forward (never back, for late-arriving
 * messages), and its workflow state follows the message. Sending sets awaiting_reply (since the
 * first unanswered send: an earlier start is kept); receiving sets open and ends the wait and its
 * follow-up, because the answer came.
 */
export async function touchThread(
  trx: Sql,
  threadId: string,
  at: Date,
  direction: 'inbound' | 'outbound',
): Promise<void> {
  if (direction === 'outbound')
    await hotRow(sql`update thread set last_message_at = greatest(last_message_at, ${at}),
      awaiting_reply_since = case when state = 'awaiting_reply' then coalesce(awaiting_reply_since, ${at}) else ${at} end,
      state = 'awaiting_reply'
      where id = ${threadId}`).execute(trx);
  else
    await hotRow(sql`update thread set last_message_at = greatest(last_message_at, ${at}), state = 'open',
      awaiting_reply_since = null, follow_up_at = null, follow_up_notified_at = null
      where id = ${threadId}`).execute(trx);
}
