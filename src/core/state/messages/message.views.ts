import { jsonValue, ms } from '../../../storage/database.js';
import { replyTextOfBodies, type Extracted } from '../extraction/extract.js';
import type { AttachmentView, DeliveryView, MessageDetail, MessageSummary } from './message.schemas.js';
import { trustOfRow } from './message-trust.js';
import { snippetOf } from './snippet.js';
import type { AttachmentRow, DetailRow, RecipientRow, SummaryRow } from './message.store.js';
import type { Screening, ScreeningView } from '../screening/screening.schemas.js';

/** The stored screening as shown (docs/screening.md); null for outbound mail and mail stored before screening. */
export function toScreeningView(stored: unknown, held: boolean | undefined): ScreeningView | null {
  const v = jsonValue(stored) as Partial<Screening> | null | undefined;
  if (!v || typeof v.score !== 'number') return null;
  return { score: v.score, signals: v.signals ?? [], held: held === true };
}

/** Where the raw RFC 5322 source of a message is served, when one was kept. */
export const rawContentPath = (messageId: string): string => `/api/messages/${encodeURIComponent(messageId)}/raw`;

export function toSummary(r: SummaryRow, mailboxAddress: string): MessageSummary {
  return {
    messageId: r.id,
    receiptId: r.id,
    threadId: r.thread_id,
    mailboxId: r.mailbox_id,
    direction: r.direction,
    subject: r.subject,
    fromAddress: r.from_address,
    fromDisplayName: r.from_display_name,
    toAddress: r.to_addresses[0] ?? null,
    mailboxAddress,
    attachmentCount: r.attachment_count,
    isRead: r.is_read,
    readAtTs: ms(r.read_at),
    createdAtTs: ms(r.created_at)!,
    receivedAtTs: ms(r.received_at),
    sentAtTs: ms(r.sent_at),
    ...trustOfRow(r),
    approvalStatus: (r.approval_status ?? null) as MessageSummary['approvalStatus'],
    screening: toScreeningView(r.screening, r.screening_held),
    // Stored at write; a row written before the column has it computed from its body's start.
    snippet: r.snippet ?? snippetOf(r.snippet_text),
    sendAtTs: r.direction === 'outbound' && r.send_at ? ms(r.send_at) : null,
  };
}

function toDelivery(r: RecipientRow): DeliveryView {
  return {
    address: r.address,
    kind: r.kind as DeliveryView['kind'],
    status: r.status,
    remoteReply: r.remote_reply,
    attempts: r.attempts,
    updatedAtTs: ms(r.updated_at)!,
    deliveredAtTs: ms(r.delivered_at),
  };
}

const toAttachment = (r: AttachmentRow): AttachmentView => ({
  attachmentId: r.id,
  filename: r.filename,
  contentType: r.content_type,
  sizeBytes: Number(r.size_bytes),
  contentId: r.content_id,
  disposition: r.disposition === 'inline' ? 'inline' : 'attachment',
});

/** An outbound message's send status from its delivery status: past the schedule, it is queued. */
const sendStatusOf = (delivery: string | null): MessageDetail['status'] =>
  delivery === 'scheduled' || delivery === 'cancelled' ? delivery : delivery === 'held' ? 'pending_approval' : 'queued';

/**
 * The detail of one message, given that message's own recipient and attachment rows. Bcc of inbound mail is never shown (a Bcc'd copy must not reveal
 * the other hidden recipients); outbound Bcc and deliveries are shown because the reader is
 * always the sending mailbox itself or its domain.
 */
export function toDetail(
  r: DetailRow,
  recipients: readonly RecipientRow[] = [],
  attachments: readonly AttachmentRow[] = [],
): MessageDetail {
  const outbound = r.direction === 'outbound';
  return {
    ...toSummary(r, r.owner_address),
    toAddresses: r.to_addresses,
    ccAddresses: r.cc_addresses,
    bccAddresses: outbound ? r.bcc_addresses : [],
    bodyText: r.body_text,
    bodyHtml: r.body_html,
    bodyFormat: r.body_format as MessageDetail['bodyFormat'],
    rawContentPath: r.raw_blob_key ? rawContentPath(r.id) : null,
    inReplyToMessageId: r.in_reply_to_message_id,
    attachments: attachments.map(toAttachment),
    deliveryStatus: outbound ? ((r.delivery_status ?? 'queued') as MessageDetail['deliveryStatus']) : null,
    status: outbound ? sendStatusOf(r.delivery_status) : null,
    deliveries: outbound ? recipients.map(toDelivery) : [],
    authentication: r.is_external
      ? {
          spf: r.auth_spf ?? 'none',
          dkim: r.auth_dkim?.includes('pass') ? 'pass' : (r.auth_dkim?.[0] ?? 'none'),
          dmarc: r.external_dmarc ?? 'none',
        }
      : null,
    extracted:
      r.extracted === null || r.extracted === undefined
        ? null
        : toDetailExtracted(r.extracted, () => replyTextOfBodies(r.body_text, r.body_html)),
  };
}

/**
 * The stored extraction (jsonb) as the wire shape. A reply text the worker has not stored yet
 * (ReplyTextBackfill) is found now by `replyText`, the same function it runs: the answer is the
 * same before and after.
 */
export function toDetailExtracted(value: unknown, replyText: () => string = () => ''): Extracted {
  const v = jsonValue(value) as Partial<Extracted> | null;
  return { codes: v?.codes ?? [], links: v?.links ?? [], replyText: v?.replyText ?? replyText() };
}

/** Groups rows by message id, for building many details from two batched queries. */
export function byMessage<T extends { message_id: string }>(rows: readonly T[]): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const row of rows) {
    const list = map.get(row.message_id);
    if (list) list.push(row);
    else map.set(row.message_id, [row]);
  }
  return map;
}
