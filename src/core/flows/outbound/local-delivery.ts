import type { Database } from '../../../storage/database.js';
import { inboundCopy, type PendingRecipientRow } from './delivery.store.js';
import { lockMailboxRows } from '../../state/mailboxes/mailbox.store.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import type { AttachmentFile } from '../../state/attachments/attachment.store.js';
import type { InboundStore } from '../inbound/inbound.store.js';
import { lockUnfinishedRecipient, setRecipientStatus } from './delivery-status.js';
import { AppError } from '../../base/errors.js';

/** RFC 3463 X.2.2: the recipient mailbox is at its storage quota (docs/api.md, "Storage quota"). */
export const MAILBOX_FULL_REPLY = '552 5.2.2 Mailbox full';

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

export type PendingRecipient = PendingRecipientRow;

/**
 * Delivers one recipient into a hosted mailbox. The inbound copy and the recipient's status
 * change commit in one transaction, and the recipient row is locked and re-checked first, so a
 * crash, an expired lease or a second worker can never deliver it twice. Bcc is never copied.
 * A recipient mailbox at its storage quota gets nothing: the answer is `'full'` and the recipient
 * stays unfinished for the caller to fail (with a bounce) like an unknown address.
 */
export async function deliverLocally(
  db: Database,
  inbound: InboundStore,
  message: OutboundMessage,
  recipient: PendingRecipient,
  targetMailboxId: string,
  at: Date,
): Promise<MailboxEvent[] | 'full'> {
  return db.tx(async (trx) => {
    if (!(await lockUnfinishedRecipient(trx, recipient.id))) return [];
    // Mailbox rows in id order: sender and recipient mailboxes are both written (events,
    // counters), and a fixed order keeps two opposite local deliveries from deadlocking.
    // Lock order throughout: recipient and message rows, then mailboxes, then threads.
    await lockMailboxRows(trx, [message.mailboxId, targetMailboxId]);
    const events: MailboxEvent[] = [];
    // Two addresses of one mailbox (primary and alias) get one copy, not two.
    const existing =
      message.internetMessageId === null
        ? undefined
        : await inboundCopy(trx, targetMailboxId, message.internetMessageId);
    if (!existing) {
      const stored = await inbound
        .store(trx, {
          mailboxId: targetMailboxId,
          from: message.fromAddress,
          fromDisplayName: message.fromDisplayName,
          to: message.to,
          cc: message.cc,
          subject: message.subject,
          bodyText: message.bodyText,
          bodyHtml: message.bodyHtml,
          internetMessageId: message.internetMessageId,
          inReplyTo: message.inReplyTo,
          references: message.references,
          attachments: message.attachments,
          receivedAt: at,
          sentAt: message.sentAt,
        })
        .catch((err: unknown) => {
          // Refused before anything was written: the transaction is still good, and commits nothing.
          if (err instanceof AppError && err.code === 'QUOTA_EXCEEDED') return 'full' as const;
          throw err;
        });
      if (stored === 'full') return 'full';
      events.push(...stored.events);
    }
    events.push(await setRecipientStatus(trx, message, recipient, 'delivered', '250 2.0.0 Delivered locally', at));
    return events;
  });
}

/** Marks a recipient permanently failed with the reply a remote server would have given. */
export async function failRecipient(
  db: Database,
  message: OutboundMessage,
  recipient: PendingRecipient,
  reply: string,
  at: Date,
): Promise<MailboxEvent[]> {
  return db.tx(async (trx) => {
    if (!(await lockUnfinishedRecipient(trx, recipient.id))) return [];
    return [await setRecipientStatus(trx, message, recipient, 'failed', reply, at)];
  });
}
