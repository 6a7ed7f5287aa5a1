import {
  replyInputSchema,
  replyParamsSchema,
  sendAcceptedSchema,
} from '../../../core/delivery/sending/send.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { MESSAGE_ID } from './fields.js';
import { idempotencyKeyArgument, OUTGOING_FIELDS, SEND_LIMITS_NOTE } from './send-mail.js';

/** POST /api/messages/{messageId}/reply. */
export const replyMessageTool = defineTool({
  name: 'reply_message',
  title: 'Reply to a message',
  description:
    'Reply to a message of one of your mailboxes, in its thread (In-Reply-To and References are set). Defaults: subject ' +
    '"Re: <original subject>"; To = the original sender for received mail, or the original To list for mail you sent. ' +
    'With a domain token mailboxAddress is required and must be the mailbox that holds the original (else error 400). ' +
    SEND_LIMITS_NOTE,
  input: describeFields(replyInputSchema, {
    ...OUTGOING_FIELDS,
    toAddress: 'Optional: one address or a list; replaces the default recipients.',
    subject: 'Optional: replaces the default "Re: <original subject>".',
  }).safeExtend({
    messageId: replyParamsSchema.shape.messageId.describe(`The message to answer. ${MESSAGE_ID}`),
    idempotencyKey: idempotencyKeyArgument,
  }),
  output: sendAcceptedSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  run: ({ messageId, idempotencyKey, ...input }, { principal, services }) =>
    services.sending.reply(principal, messageId, input, { channel: 'mcp', idempotencyKey }),
});
