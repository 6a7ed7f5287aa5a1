import { sql, date, type Database } from '../../../storage/database.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { attachmentsOfMessage } from '../../attachments/attachment.store.js';
import { observability } from '../../observability.js';
import type { InboundStore } from '../receiving/inbound-store.js';
import { MAILBOX_FULL_REPLY, deliverLocally, failRecipient, type PendingRecipient } from './local-delivery.js';
import { routeRecipient } from '../recipient-routing.js';
import { deliverExternally, failWithBounce, type TransferDeps, type TransferMessage } from './external-delivery.js';
import type { LeaseGuard } from './job-lease.js';

export interface JobOutcome {
  /** Recipients still waiting for a transport (external addresses while none is configured). */
  waiting: number;
  events: MailboxEvent[];
  /** Recipients that failed temporarily in this attempt and are due again later. */
  deferred?: number;
}

/** What the worker hands over for recipients that leave the system or bounce. */
export interface TransferContext {
  deps: TransferDeps;
  /** The job's lease; external sends happen only while it holds. */
  lease?: LeaseGuard;
}

// RFC 5321 §4.2.2 / RFC 3463 §3.2: 5.1.1 bad destination mailbox address.
const UNKNOWN_LOCAL_REPLY = '550 5.1.1 No such mailbox here';

/**
 * Delivers every unfinished recipient of one outbound message. Hosted addresses are delivered
 * locally, each in its own transaction (a failure later in the list keeps earlier deliveries);
 * unknown addresses of hosted domains fail at once (with a bounce when the worker passes its
 * transfer context); external ones go to the configured transport, or stay queued without one.
 */
export async function deliverMessage(
  db: Database,
  inbound: InboundStore,
  messageId: string,
  at: Date,
  transfer?: TransferContext,
): Promise<JobOutcome> {
  const message = await loadOutbound(db, messageId);
  if (!message) return { waiting: 0, events: [] };
  const recipients = await db.rows(sql<PendingRecipient>`select id, address from message_recipient
    where message_id = ${messageId} and status in ('queued', 'deferred') order by id`);
  const events: MailboxEvent[] = [];
  const external: PendingRecipient[] = [];
  const unknown: PendingRecipient[] = [];
  const full: PendingRecipient[] = [];
  for (const recipient of recipients) {
    const route = await routeRecipient(db, recipient.address);
    if (route.kind === 'local') {
      const delivered = await deliverLocally(db, inbound, message, recipient, route.mailboxId, at);
      if (delivered === 'full') {
        full.push(recipient);
        continue;
      }
      if (delivered.length) observability().deliveryOutcome('local', 'delivered');
      events.push(...delivered);
    } else if (route.kind === 'unknown-local') unknown.push(recipient);
    else external.push(recipient);
  }
  const failed = [
    ...unknown.map((r) => ({ recipient: r, address: r.address, reply: UNKNOWN_LOCAL_REPLY })),
    ...full.map((r) => ({ recipient: r, address: r.address, reply: MAILBOX_FULL_REPLY })),
  ];
  if (failed.length) {
    observability().deliveryOutcome('local', 'failed', failed.length);
    if (transfer) events.push(...(await failWithBounce(transfer.deps, message, failed, null, at)));
    else for (const f of failed) events.push(...(await failRecipient(db, message, f.recipient, f.reply, at)));
  }
  if (external.length === 0) return { waiting: 0, events };
  if (!transfer?.deps.transport) return { waiting: external.length, events };
  const sent = await deliverExternally(transfer.deps, message, external, transfer.lease, at);
  return { waiting: 0, events: [...events, ...sent.events], deferred: sent.deferred };
}

async function loadOutbound(db: Database, messageId: string): Promise<TransferMessage | undefined> {
  const row = await db.one(sql<{
    id: string;
    mailbox_id: string;
    domain_id: string;
    from_address: string;
    from_display_name: string;
    to_addresses: string[];
    cc_addresses: string[];
    subject: string;
    body_text: string | null;
    body_html: string | null;
    internet_message_id: string | null;
    in_reply_to_message_id: string | null;
    references_header: string[];
    sent_at: string | null;
    created_at: string;
    raw_blob_key: string | null;
    auto_submitted: string | null;
  }>`select m.id, m.mailbox_id, mb.domain_id, m.from_address, m.from_display_name, m.to_addresses, m.cc_addresses, m.subject, m.body_text, m.body_html,
      m.internet_message_id, m.in_reply_to_message_id, m.references_header, m.sent_at, m.created_at, m.raw_blob_key,
      m.auto_submitted
    from message m join mailbox mb on mb.id = m.mailbox_id where m.id = ${messageId} and m.direction = 'outbound'`);
  if (!row) return undefined;
  return {
    id: row.id,
    mailboxId: row.mailbox_id,
    domainId: row.domain_id,
    fromAddress: row.from_address,
    fromDisplayName: row.from_display_name,
    to: row.to_addresses,
    cc: row.cc_addresses,
    subject: row.subject,
    bodyText: row.body_text,
    bodyHtml: row.body_html,
    internetMessageId: row.internet_message_id,
    // A reply's References end with its parent's msg-id (threading.replyReferences).
    inReplyTo: row.in_reply_to_message_id ? (row.references_header[row.references_header.length - 1] ?? null) : null,
    references: row.references_header,
    sentAt: date(row.sent_at),
    createdAt: new Date(row.created_at),
    rawBlobKey: row.raw_blob_key,
    autoSubmitted: row.auto_submitted,
    attachments: await attachmentsOfMessage(db.db, row.id),
  };
}
