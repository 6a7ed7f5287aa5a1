import { forwardInputSchema, replyParamsSchema, sendAcceptedSchema } from '../../../core/flows/sending/send.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { MESSAGE_ID } from './fields.js';
import { idempotencyKeyArgument, OUTGOING_FIELDS, SEND_LIMITS_NOTE } from './send-mail.js';

/** POST /api/messages/{messageId}/forward. */
export const forwardMessageTool = defineTool({
  name: 'forward_message',
  title: 'Forward a message',
  description:
    'Forward a message of one of your mailboxes to new recipients, as a new message in a new thread. The forward carries ' +
    'your optional note (bodyText/bodyHtml), then the original under a "---------- Forwarded message ---------" block ' +
    '(From, Date, Subject, To, Cc), and every attachment of the original (plus any attachmentIds you add). Default ' +
    'subject "Fwd: <original subject>". With a domain token mailboxAddress is required and must be the mailbox that ' +
    'holds the original (else error 400). ' +
    SEND_LIMITS_NOTE,
  input: describeFields(forwardInputSchema, {
    ...OUTGOING_FIELDS,
    toAddress: 'One address or a list: who receives the forward.',
    subject: 'Optional: replaces the default "Fwd: <original subject>".',
    bodyText: 'Optional note above the forwarded original (plain text).',
    bodyHtml: 'Optional note above the forwarded original (HTML).',
  }).safeExtend({
    messageId: replyParamsSchema.shape.messageId.describe(`The message to forward. ${MESSAGE_ID}`),
    idempotencyKey: idempotencyKeyArgument,
  }),
  output: sendAcceptedSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  run: ({ messageId, idempotencyKey, ...input }, { principal, services }) =>
    services.sending.forward(principal, messageId, input, { channel: 'mcp', idempotencyKey }),
});
