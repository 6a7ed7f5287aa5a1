import { createDraftInputSchema, draftSchema } from '../../../core/state/drafts/draft.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_ACTING } from './fields.js';
import { OUTGOING_FIELDS } from './send-mail.js';

/** The content arguments create_draft and update_draft share with their HTTP bodies, described once. */
export const DRAFT_FIELDS = {
  toAddress: 'One address or a list. May be left out or empty for now: a draft needs recipients only to be sent.',
  ccAddresses: OUTGOING_FIELDS.ccAddresses,
  bccAddresses: OUTGOING_FIELDS.bccAddresses,
  subject:
    'Subject line (at most 998 characters). null or absent: none yet (a reply draft then takes "Re: " + the original\'s).',
  bodyText: 'Plain-text body. A draft may have no body yet; sending it needs bodyText or bodyHtml.',
  bodyHtml: OUTGOING_FIELDS.bodyHtml,
  attachmentIds:
    'attachmentUploadId values from upload_attachment (at most 100). The draft holds them until it is sent or deleted ' +
    '(they do not expire meanwhile); an upload held by one draft cannot be used by another message.',
  parentMessageId:
    'Makes it a reply draft: the messageId it answers, a message of the same mailbox. Sent like reply_message ' +
    '(threading, default recipients, exactly one "Re: ").',
  replyAll: 'Reply drafts: also Cc everyone the original was addressed to, except your own addresses. Default false.',
  sendAt:
    'Optional: when sent, schedule it for this time (milliseconds since the epoch), as send_mail does; null clears it. ' +
    'It is only a field of the draft until send_draft.',
  cancelOnReply: 'With sendAt: cancel the scheduled send if a message arrives in its thread first. Default false.',
} as const;

/** What drafts are for, in every draft tool's description. */
export const DRAFT_NOTE =
  'A draft is a message kept in the mailbox, not sent: prepare one for a person to review, change and send (the web ' +
  "console's Drafts folder shows it), or keep one to finish later. Its content is written by tokens of this mailbox. ";

/** POST /api/drafts. */
export const createDraftTool = defineTool({
  name: 'create_draft',
  title: 'Save a draft',
  description:
    'Save a draft of an e-mail instead of sending it: use it when a person should review the message before it goes ' +
    '(send_mail sends at once). ' +
    DRAFT_NOTE +
    'Any field may be missing for now; send_draft checks it is complete. Emits draft.created. Change it with ' +
    'update_draft, send it with send_draft, discard it with delete_draft. Needs the MailboxSend scope. ' +
    ERRORS_NOTE,
  input: describeFields(createDraftInputSchema, { ...DRAFT_FIELDS, mailboxAddress: MAILBOX_ADDRESS_ACTING }),
  output: draftSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  run: (input, { principal, services }) => services.drafts.create(principal, input),
});
