import { sql, type Database, type Sql } from '../../storage/database.js';
import { appendEvent, type MailboxEvent } from '../events/event-log.js';
import type { AttachmentFile } from '../attachments/attachment.store.js';
import type { InboundStore } from './inbound-store.js';
import { refreshDeliveryStatus, type RecipientStatus } from './delivery-status.js';

/** The sender's outbound row, as every recipient's copy is built from it. */
export interface OutboundMessage {
  id: string;
  mailboxId: string;
  fromAddress: string;
  fromDisplayName: string;
  to: string[];
  cc: string[];
  subject: string;
  bodyText: string | null;
  bodyHtml: string | null;
  internetMessageId: string | null;
  /** The In-Reply-To msg-id (the last References entry of a reply), or null. */
  inReplyTo: string | null;
  references: string[];
  sentAt: Date | null;
  attachments: AttachmentFile[];
}

export interface PendingRecipient {
  id: string;
  address: string;
}

/**
 * Delivers one recipient into a hosted mailbox. The inbound copy and the recipient's status
 * change commit in one transaction, and the recipient row is locked and re-checked first, so a
 * crash, an expired lease or a second worker can never deliver it twice. Bcc is never copied.
 */
export async function deliverLocally(db: Database, inbound: InboundStore, message: OutboundMessage, recipient: PendingRecipient, targetMailboxId: string, at: Date): Promise<MailboxEvent[]> {
  return db.tx(async (trx) => {
    if (!(await lockUnfinished(trx, recipient.id))) return [];
    // Mailbox rows in id order: sender and recipient mailboxes are both written (events,
    // counters), and a fixed order keeps two opposite local deliveries from deadlocking.
    // Lock order throughout: recipient and message rows, then mailboxes, then threads.
    await sql`select id from mailbox where id = any(${[message.mailboxId, targetMailboxId]}::text[]) order by id for update`.execute(trx);
    const events: MailboxEvent[] = [];
    // Two addresses of one mailbox (primary and alias) get one copy, not two.
    const existing = message.internetMessageId === null ? undefined : (await sql<{ id: string }>`select id from message
      where mailbox_id = ${targetMailboxId} and direction = 'inbound' and internet_message_id = ${message.internetMessageId} limit 1`.execute(trx)).rows[0];
    if (!existing) {
      const stored = await inbound.store(trx, {
        mailboxId: targetMailboxId, from: message.fromAddress, fromDisplayName: message.fromDisplayName, to: message.to, cc: message.cc,
        subject: message.subject, bodyText: message.bodyText, bodyHtml: message.bodyHtml, internetMessageId: message.internetMessageId,
        inReplyTo: message.inReplyTo, references: message.references, attachments: message.attachments, receivedAt: at, sentAt: message.sentAt,
      });
      events.push(...stored.events);
    }
    events.push(await setRecipientStatus(trx, message, recipient, 'delivered', '250 2.0.0 Delivered locally', at));
    return events;
  });
}

/** Marks a recipient permanently failed with the reply a remote server would have given. */
export async function failRecipient(db: Database, message: OutboundMessage, recipient: PendingRecipient, reply: string, at: Date): Promise<MailboxEvent[]> {
  return db.tx(async (trx) => {
    if (!(await lockUnfinished(trx, recipient.id))) return [];
    return [await setRecipientStatus(trx, message, recipient, 'failed', reply, at)];
  });
}

/** Locks the recipient and its message (whose status this changes); true while it is still to do. */
async function lockUnfinished(trx: Sql, recipientId: string): Promise<boolean> {
  const row = (await sql<{ status: RecipientStatus }>`select r.status from message_recipient r join message m on m.id = r.message_id
    where r.id = ${recipientId} for update`.execute(trx)).rows[0];
  return row?.status === 'queued' || row?.status === 'deferred';
}

/** Stores a recipient's new status, recomputes the message's, and logs `message.delivery` for the sender. */
async function setRecipientStatus(trx: Sql, message: OutboundMessage, recipient: PendingRecipient, status: RecipientStatus, reply: string, at: Date): Promise<MailboxEvent> {
  await sql`update message_recipient set status = ${status}, remote_reply = ${reply}, attempts = attempts + 1, updated_at = ${at},
    delivered_at = ${status === 'delivered' ? at : null} where id = ${recipient.id}`.execute(trx);
  const deliveryStatus = await refreshDeliveryStatus(trx, message.id);
  return appendEvent(trx, message.mailboxId, 'message.delivery', {
    messageId: message.id, recipient: recipient.address, recipientStatus: status, deliveryStatus, remoteReply: reply,
    deliveredAtTs: status === 'delivered' ? at.getTime() : null,
  }, at);
}
