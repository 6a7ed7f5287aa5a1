import { date, type Database } from '../../../storage/database.js';
import { outboundMessage, pendingRecipients } from './delivery.store.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { attachmentsOfMessage } from '../../state/attachments/attachment.store.js';
import { observability } from '../../base/observability.js';
import type { InboundStore } from '../inbound/inbound.store.js';
import { MAILBOX_FULL_REPLY, deliverLocally, failRecipient, type PendingRecipient } from './local-delivery.js';
import { routeRecipient } from '../delivery/recipient-routing.js';
import {
  deliverExternally,
  failWithBounce,
  transferForm,
  type TransferDeps,
  type TransferMessage,
} from './external-delivery.js';
import { keepSentRaw, needsSentRaw } from './sent-raw.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import type { LeaseGuard } from './job-lease.js';
import { isSimulated, simulatorTransport } from './simulator-transport.js';

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
  const recipients = await pendingRecipients(db, messageId);
  const events: MailboxEvent[] = [];
  const external: PendingRecipient[] = [];
  const unknown: PendingRecipient[] = [];
  const full: PendingRecipient[] = [];
  const simulated: PendingRecipient[] = [];
  for (const recipient of recipients) {
    const route = await routeRecipient(db, recipient.address, at);
    if (route.kind === 'local') {
      const delivered = await deliverLocally(db, inbound, message, recipient, route.mailboxId, at);
      if (delivered === 'full') {
        full.push(recipient);
        continue;
      }
      if (delivered.length) observability().deliveryOutcome('local', 'delivered');
      events.push(...delivered);
    } else if (route.kind === 'unknown-local') unknown.push(recipient);
    else if (isSimulated(recipient.address)) simulated.push(recipient);
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
  // simulator.invalid: the real delivery path with the simulator as its transport, whatever transport is configured.
  let simulatedDeferred = 0;
  if (simulated.length && transfer) {
    const deps = { ...transfer.deps, transport: simulatorTransport(db, message.id) };
    const outcome = await deliverExternally(deps, message, simulated, transfer.lease, at);
    events.push(...outcome.events);
    simulatedDeferred = outcome.deferred;
  }
  // Delivered only to hosted mailboxes: the source is composed and signed as it would have left, now,
  // so the raw route answers the same bytes however often it is asked. The mail is delivered already:
  // a source that cannot be built (e.g. an unreadable DKIM key) is logged and left out, not retried.
  if (transfer && external.length === 0 && simulated.length === 0 && needsSentRaw(message)) {
    try {
      await keepSentRaw(transfer.deps, message, (await transferForm(transfer.deps, message, [], at)).raw, at);
    } catch (err) {
      if (isStorageUnavailable(err)) throw err;
      transfer.deps.log.warn('delivery.sent_raw_failed', { messageId: message.id, err });
    }
  }
  const unsimulated = transfer ? 0 : simulated.length;
  if (external.length === 0) return { waiting: unsimulated, events, deferred: simulatedDeferred };
  if (!transfer?.deps.transport) return { waiting: external.length + unsimulated, events, deferred: simulatedDeferred };
  const sent = await deliverExternally(transfer.deps, message, external, transfer.lease, at);
  return { waiting: 0, events: [...events, ...sent.events], deferred: sent.deferred + simulatedDeferred };
}

async function loadOutbound(db: Database, messageId: string): Promise<TransferMessage | undefined> {
  const row = await outboundMessage(db, messageId);
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
    sentRawBlobKey: row.sent_raw_blob_key,
    autoSubmitted: row.auto_submitted,
    attachments: await attachmentsOfMessage(db.db, row.id),
  };
}
