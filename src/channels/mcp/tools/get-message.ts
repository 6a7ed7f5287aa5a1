import { messageDetailSchema, messageRefInputSchema } from '../../../core/state/messages/message.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { BODY_NOTE, ERRORS_NOTE, MAILBOX_ADDRESS_BY_ID, MESSAGE_ID, maxCharsSchema } from './fields.js';
import { boundMessage, fencedText } from '../untrusted-text.js';

/** GET /api/messages/{messageId}. */
export const getMessageTool = defineTool({
  name: 'get_message',
  title: 'Get a message',
  description:
    'Read one message in full: bodies (bodyText and/or bodyHtml), all recipients, attachment metadata and, for mail this ' +
    'mailbox sent, the delivery status per recipient (queued, deferred, delivered, failed). Reading does not mark it read ' +
    '(use set_read_state). A deleted message, or one this token may not see, is error 404. Needs the MailboxRead scope. ' +
    BODY_NOTE +
    ' ' +
    ERRORS_NOTE,
  input: describeFields(messageRefInputSchema, {
    messageId: MESSAGE_ID,
    mailboxAddress: MAILBOX_ADDRESS_BY_ID,
  }).extend({ maxChars: maxCharsSchema }),
  output: messageDetailSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: ({ maxChars: _, ...ref }, { principal, services }) => services.messages.get(principal, ref),
  text: (data, input) => fencedText(data, [data], input.maxChars),
  structured: (data, input) => boundMessage(data, input.maxChars),
});
