import {
  attachmentTextInputSchema,
  attachmentTextSchema,
} from '../../../core/attachments/text/attachment-text.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_BY_ID, MESSAGE_ID } from './fields.js';

/** GET /api/messages/{messageId}/attachments/{attachmentId}/text. */
export const getAttachmentTool = defineTool({
  name: 'get_attachment',
  title: 'Read an attachment as text',
  description:
    'The text content of one attachment of a message: PDF, DOCX (Word), HTML and plain-text files (CSV, JSON, Markdown…). ' +
    'Take attachmentId from get_message (attachments[].attachmentId). Long documents are cut at the output cap ' +
    '(truncated true). Other file types are error 415, files over the size cap 413, a file that cannot be read in time ' +
    '422. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: describeFields(attachmentTextInputSchema, {
    messageId: MESSAGE_ID,
    attachmentId: 'An attachmentId from get_message (starts with att_).',
    mailboxAddress: MAILBOX_ADDRESS_BY_ID,
  }),
  output: attachmentTextSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.attachmentText.text(principal, input),
});
