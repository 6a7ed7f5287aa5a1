import { hotRow, sql, type Database, type Sql } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';
import type { Visibility } from '../../access/principal.js';
import { visible } from '../../state/messages/message.store.js';

/** What the worker does with a due scheduled send after admitting it. */
export type ScheduledOutcome =
  | { kind: 'send' }
  | { kind: 'held' }
  | { kind: 'refused'; reason: string }
  /** Over the rate limit or reply budget at its due time: tried again after this. */
  | { kind: 'later'; retryAfterMs: number }
  /** Cancelled (or already released by another worker): nothing to do. */
  | { kind: 'gone' };

export type ScheduledRow = Row<
  'message',
  | 'id'
  | 'mailbox_id'
  | 'delivery_status'
  | 'subject'
  | 'body_text'
  | 'body_html'
  | 'to_addresses'
  | 'cc_addresses'
  | 'bcc_addresses'
  | 'in_reply_to_message_id'
> & { domain_id: string };

export function scheduledMessage(db: Database, messageId: string): Promise<ScheduledRow | undefined> {
  return db.one(sql<ScheduledRow>`select m.id, m.mailbox_id, mb.domain_id, m.delivery_status, m.subject, m.body_text,
      m.body_html, m.to_addresses, m.cc_addresses, m.bcc_addresses, m.in_reply_to_message_id
    from message m join mailbox mb on mb.id = m.mailbox_id where m.id = ${messageId} and m.deleted_at is null`);
}

/**
 * Moves a due scheduled message on: queued for delivery, or held for approval (its job then
 * ends; approving queues a new one, as for any held message). Guarded by the status, so a cancel
 * that came first wins, and the row lock orders the two. False when it is no longer scheduled.
 */
export async function releaseScheduled(
  trx: Sql,
  messageId: string,
  held: boolean,
  autoSubmitted: string | null,
  at: Date,
): Promise<boolean> {
  const state = held ? 'held' : 'queued';
  const { rows } = await sql<{ id: string }>`update message set delivery_status = ${state},
      approval_status = ${held ? 'pending' : null}, auto_submitted = ${autoSubmitted}
    where id = ${messageId} and delivery_status = 'scheduled' returning id`.execute(trx);
  if (rows.length === 0) return false;
  await sql`update message_recipient set status = ${state}, updated_at = ${at}
    where message_id = ${messageId} and status = 'scheduled'`.execute(trx);
  // In the same commit: a worker that dies after it finds an ordinary job (or none), never a second
  // admission. A held one's job goes: approving inserts the message's one job (unique per message).
  await (
    held
      ? sql`delete from outbox_job where message_id = ${messageId} and admit_channel is not null`
      : sql`update outbox_job set admit_token_id = null, admit_channel = null, updated_at = ${at}
        where message_id = ${messageId} and admit_channel is not null`
  ).execute(trx);
  return true;
}

/** The policy refused it when due: it fails with the reason on each recipient, and never leaves. */
export async function refuseScheduled(db: Database, messageId: string, reason: string, at: Date): Promise<boolean> {
  return db.writeTx(async (trx) => {
    const { rows } = await sql<{ id: string }>`update message set delivery_status = 'failed'
      where id = ${messageId} and delivery_status = 'scheduled' returning id`.execute(trx);
    if (rows.length === 0) return false;
    await sql`update message_recipient set status = 'failed', remote_reply = ${reason.slice(0, 500)}, updated_at = ${at}
      where message_id = ${messageId} and status = 'scheduled'`.execute(trx);
    return true;
  });
}

/**
 * Cancels scheduled messages (by id, or cancel-on-reply ones of a thread) that have not left:
 * they and their recipients become `cancelled`, and their jobs end. Returns the ids cancelled and
 * their recipients (for the events that tell of it).
 */
export async function cancelScheduled(
  trx: Sql,
  where: { messageId: string } | { threadId: string },
  at: Date,
): Promise<{ ids: string[]; recipients: { message_id: string; address: string }[] }> {
  const match =
    'messageId' in where
      ? sql`id = ${where.messageId}`
      : sql`thread_id = ${where.threadId} and cancel_on_reply and direction = 'outbound'`;
  // Marked like the thread's touch it follows, so the lock order (thread, then its messages) holds.
  const { rows } = await hotRow(sql<{ id: string }>`update message set delivery_status = 'cancelled'
    where ${match} and delivery_status = 'scheduled' returning id`).execute(trx);
  const ids = rows.map((r) => r.id);
  if (ids.length === 0) return { ids, recipients: [] };
  const recipients = await sql<{ message_id: string; address: string }>`update message_recipient
    set status = 'cancelled', updated_at = ${at}
    where message_id = any(${ids}::text[]) and status = 'scheduled' returning message_id, address`.execute(trx);
  // A job under a worker's lease is left to it: the worker finds the message cancelled and ends it.
  await sql`update outbox_job set status = 'done', last_error = 'cancelled', updated_at = ${at}
    where message_id = any(${ids}::text[]) and status = 'pending' and lease_until is null`.execute(trx);
  return { ids, recipients: recipients.rows };
}

/** A visible outbound message's delivery status, for the cancel's answer (undefined: not visible). */
export async function visibleOutboundStatus(
  db: Database,
  v: Visibility,
  messageId: string,
): Promise<{ delivery_status: string | null; mailbox_id: string } | undefined> {
  return db.one(sql<{
    delivery_status: string | null;
    mailbox_id: string;
  }>`select m.delivery_status, m.mailbox_id from message m
    join mailbox mb on mb.id = m.mailbox_id
    where m.id = ${messageId} and m.direction = 'outbound' and m.deleted_at is null and ${visible(v)}`);
}
