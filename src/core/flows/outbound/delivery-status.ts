import type { Sql } from '../../../storage/database.js';
import {
  lockRecipient,
  recipientStatuses,
  setMessageDeliveryStatus,
  updateRecipientStatus,
  type RecipientStatus,
} from './delivery.store.js';
import { appendEvent } from '../../state/events/event-log.js';
import { type MailboxEvent } from '../../../types/mailbox-event.js';

export type { RecipientStatus };
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
  const status = overallStatus(await recipientStatuses(trx, messageId));
  await setMessageDeliveryStatus(trx, messageId, status);
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
  const status = await lockRecipient(trx, recipientId);
  return status === 'queued' || status === 'deferred';
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
  await updateRecipientStatus(trx, recipient.id, status, reply, at);
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
