import { ms, num } from '../../../storage/database.js';
import { snippetOf } from '../messages/snippet.js';
import type { Draft, DraftSummary } from './draft.schemas.js';
import type { DraftAttachmentRow, DraftPageRow, DraftRow } from './draft.store.js';

type Common = Omit<DraftRow, 'body_text' | 'body_html'>;

function common(r: Common, attachments: readonly DraftAttachmentRow[]): Omit<DraftSummary, 'snippet'> {
  const own = attachments.filter((a) => a.draft_id === r.id);
  return {
    draftId: r.id,
    mailboxId: r.mailbox_id,
    mailboxAddress: r.mailbox_address,
    toAddress: r.to_addresses,
    ccAddresses: r.cc_addresses,
    bccAddresses: r.bcc_addresses,
    subject: r.subject,
    attachmentIds: own.map((a) => a.id),
    attachments: own.map((a) => ({
      attachmentId: a.id,
      filename: a.filename,
      contentType: a.content_type,
      sizeBytes: num(a.size_bytes),
    })),
    parentMessageId: r.parent_message_id,
    replyAll: r.reply_all,
    sendAtTs: ms(r.send_at),
    cancelOnReply: r.cancel_on_reply,
    createdByTokenId: r.created_by_token_id,
    createdAtTs: ms(r.created_at)!,
    updatedAtTs: ms(r.updated_at)!,
  };
}

/** The detail (GET /api/drafts/{draftId}). */
export const toDraft = (r: DraftRow, attachments: readonly DraftAttachmentRow[]): Draft => ({
  ...common(r, attachments),
  snippet: snippetOf(r.body_text),
  bodyText: r.body_text,
  bodyHtml: r.body_html,
});

/** An item of the list. */
export const toDraftSummary = (r: DraftPageRow, attachments: readonly DraftAttachmentRow[]): DraftSummary => ({
  ...common(r, attachments),
  snippet: snippetOf(r.body_start),
});

/** What an event carries: the summary, without the mailbox address the event names itself. */
export function draftEventData(d: Draft): Record<string, unknown> {
  const { mailboxAddress: _address, bodyText: _text, bodyHtml: _html, ...data } = d;
  return data;
}
