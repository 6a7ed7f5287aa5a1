import { replyInputSchema, replyParamsSchema, sendAcceptedSchema } from '../../../core/flows/sending/send.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { MESSAGE_ID } from './fields.js';
import {
  idempotencyKeyArgument,
  OUTGOING_FIELDS,
  SCHEDULE_FIELDS,
  SCHEDULE_NOTE,
  SEND_LIMITS_NOTE,
} from './send-mail.js';

/** POST /api/messages/{messageId}/reply. */
export const replyMessageTool = defineTool({
  name: 'reply_message',
  title: 'Reply to a message',
  description:
    "Reply to a message of one of your mailboxes, in its thread (In-Reply-To is the original, References the original's " +
    'References followed by its Message-ID). The subject carries exactly one "Re: " (given or the original\'s). ' +
    'Default To: the Reply-To (else the sender) of received mail, or the original To list of mail you sent. ' +
    'replyAll: true also copies (Cc) everyone else the original was addressed to (its To and Cc), never your own addresses ' +
    'or aliases, plus any ccAddresses. ' +
    'With a domain token mailboxAddress is required and must be the mailbox that holds the original (else error 400). ' +
    SCHEDULE_NOTE +
    SEND_LIMITS_NOTE,
  input: describeFields(replyInputSchema, {
    ...SCHEDULE_FIELDS,
    ...OUTGOING_FIELDS,
    toAddress: 'Optional: one address or a list; replaces the default recipients.',
    subject: 'Optional: replaces the original subject; it still gets exactly one "Re: " prefix.',
    replyAll: 'Optional (default false): Cc everyone the original was addressed to except your own addresses.',
  }).safeExtend({
    messageId: replyParamsSchema.shape.messageId.describe(`The message to answer. ${MESSAGE_ID}`),
    idempotencyKey: idempotencyKeyArgument,
  }),
  output: sendAcceptedSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  run: ({ messageId, idempotencyKey, ...input }, { principal, services }) =>
    services.sending.reply(principal, messageId, input, { channel: 'mcp', idempotencyKey }),
});
