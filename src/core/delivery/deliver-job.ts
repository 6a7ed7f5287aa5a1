import { sql, date, type Database } from '../../storage/database.js';
import type { MailboxEvent } from '../events/event-log.js';
import { attachmentsOfMessage } from '../attachments/attachment.store.js';
import type { InboundStore } from './inbound-store.js';
import { deliverLocally, failRecipient, type OutboundMessage, type PendingRecipient } from './local-delivery.js';
import { routeRecipient } from './recipient-routing.js';

export interface JobOutcome {
  /** Recipients still waiting for a transport (external addresses). */
  waiting: number;
  events: MailboxEvent[];
}

// RFC 5321 §4.2.2 / RFC 3463 §3.2: 5.1.1 bad destination mailbox address.
const UNKNOWN_LOCAL_REPLY = '550 5.1.1 No such mailbox here';

/**
 * Delivers every unfinished recipient of one outbound message. Hosted addresses are delivered
 * locally, each in its own transaction (a failure later in the list keeps earlier deliveries);
 * external ones are left queued for the SMTP transport.
 */
export async function deliverMessage(db: Database, inbound: InboundStore, messageId: string, at: Date): Promise<JobOutcome> {
  const message = await loadOutbound(db, messageId);
  if (!message) return { waiting: 0, events: [] };
  const recipients = await db.rows(sql<PendingRecipient>`select id, address from message_recipient
    where message_id = ${messageId} and status in ('queued', 'deferred') order by id`);
  const events: MailboxEvent[] = [];
  let waiting = 0;
  for (const recipient of recipients) {
    const route = await routeRecipient(db, recipient.address);
    if (route.kind === 'local') events.push(...await deliverLocally(db, inbound, message, recipient, route.mailboxId, at));
    else if (route.kind === 'unknown-local') events.push(...await failRecipient(db, message, recipient, UNKNOWN_LOCAL_REPLY, at));
    else waiting++;
  }
  return { waiting, events };
}

async function loadOutbound(db: Database, messageId: string): Promise<OutboundMessage | undefined> {
  const row = await db.one(sql<{
    id: string; mailbox_id: string; from_address: string; from_display_name: string; to_addresses: string[]; cc_addresses: string[];
    subject: string; body_text: string | null; body_html: string | null; internet_message_id: string | null;
    in_reply_to_message_id: string | null; references_header: string[]; sent_at: string | null;
  }>`select id, mailbox_id, from_address, from_display_name, to_addresses, cc_addresses, subject, body_text, body_html,
      internet_message_id, in_reply_to_message_id, references_header, sent_at
    from message where id = ${messageId} and direction = 'outbound'`);
  if (!row) return undefined;
  return {
    id: row.id, mailboxId: row.mailbox_id, fromAddress: row.from_address, fromDisplayName: row.from_display_name,
    to: row.to_addresses, cc: row.cc_addresses, subject: row.subject, bodyText: row.body_text, bodyHtml: row.body_html,
    internetMessageId: row.internet_message_id,
    // A reply's References end with its parent's msg-id (threading.replyReferences).
    inReplyTo: row.in_reply_to_message_id ? (row.references_header[row.references_header.length - 1] ?? null) : null,
    references: row.references_header, sentAt: date(row.sent_at),
    attachments: await attachmentsOfMessage(db.db, row.id),
  };
}
