import { sql, type Sql } from '../../../storage/database.js';
import { appendEvent } from '../../events/event-log.js';
import { type MailboxEvent } from '../../../types/mailbox-event.js';

/** Per recipient: queued (not tried or waiting for a transport), deferred (temporary failure), or final. */
export type RecipientStatus = 'queued' | 'deferred' | 'delivered' | 'failed';
export type DeliveryStatus = RecipientStatus;

/**
 * A message's deliveryStatus from its recipients: while any is unfinished it is `deferred` if one
 * had a temporary failure, else `queued`; once all are final it is `failed` if any failed, else
 * `delivered`. So `delivered` always means every recipient got it.
 */
export function overallStatus(statuses: readonly RecipientStatus[]): DeliveryStatus {
  if (statuses.some((s) => s === 'queued' || s === 'deferred'))
    return statuses.includes('deferred') ? 'deferred' : 'queued';
  return statuses.includes('failed') ? 'failed' : 'delivered';
}

/** Recomputes and stores the message's deliveryStatus inside the recipient change's transaction. */
export async function refreshDeliveryStatus(trx: Sql, messageId: string): Promise<DeliveryStatus> {
  const rows = (
    await sql<{
      status: RecipientStatus;
    }>`select status from message_recipient where message_id = ${messageId}`.execute(trx)
  ).rows;
  const status = overallStatus(rows.map((r) => r.status));
  await sql`update message set delivery_status = ${status} where id = ${messageId}`.execute(trx);
  return status;
}

/**
 * Records one recipient's outcome inside the caller's transaction: locks the recipient (and its
 * message), and only while it is still unfinished stores the status and reply, recomputes the
 * message's deliveryStatus and logs `message.delivery` for the sender. Null when the recipient
 * was already final, so a second worker or a replayed attempt changes nothing.
 */
export async function recordRecipientOutcome(
  trx: Sql,
  message: { id: string; mailboxId: string },
  recipient: { id: string; address: string },
  status: RecipientStatus,
  reply: string,
  at: Date,
): Promise<MailboxEvent | null> {
  if (!(await lockUnfinishedRecipient(trx, recipient.id))) return null;
  return setRecipientStatus(trx, message, recipient, status, reply, at);
}

/** Locks the recipient and its message (whose status a change recomputes); true while it is still to do. */
export async function lockUnfinishedRecipient(trx: Sql, recipientId: string): Promise<boolean> {
  const row = (
    await sql<{
      status: RecipientStatus;
    }>`select r.status from message_recipient r join message m on m.id = r.message_id
    where r.id = ${recipientId} for update`.execute(trx)
  ).rows[0];
  return row?.status === 'queued' || row?.status === 'deferred';
}

/** Stores a locked recipient's new status, recomputes the message's, and logs `message.delivery` for the sender. */
export async function setRecipientStatus(
  trx: Sql,
  message: { id: string; mailboxId: string },
  recipient: { id: string; address: string },
  status: RecipientStatus,
  reply: string,
  at: Date,
): Promise<MailboxEvent> {
  await sql`update message_recipient set status = ${status}, remote_reply = ${reply}, attempts = attempts + 1, updated_at = ${at},
    delivered_at = ${status === 'delivered' ? at : null} where id = ${recipient.id}`.execute(trx);
  const deliveryStatus = await refreshDeliveryStatus(trx, message.id);
  return appendEvent(
    trx,
    message.mailboxId,
    'message.delivery',
    {
      messageId: message.id,
      recipient: recipient.address,
      recipientStatus: status,
      deliveryStatus,
      remoteReply: reply,
      deliveredAtTs: status === 'delivered' ? at.getTime() : null,
    },
    at,
  );
}
