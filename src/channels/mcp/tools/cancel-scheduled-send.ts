import { z } from 'zod';
import { cancelScheduleResultSchema, replyParamsSchema } from '../../../core/flows/sending/send.schemas.js';
import { defineTool } from '../tool.js';
import { ERRORS_NOTE, MESSAGE_ID } from './fields.js';

/** DELETE /api/messages/{messageId}/schedule. */
export const cancelScheduledSendTool = defineTool({
  name: 'cancel_scheduled_send',
  title: 'Cancel a scheduled send',
  description:
    'Cancel a message scheduled with sendAt (send_mail, reply_message or send_draft answered status "scheduled") ' +
    'before it leaves: it never leaves, and get_message shows status "cancelled". Cancelling again answers the same ' +
    'with cancelled false. A message that already left, or was never scheduled, is error 409 ' +
    '(SCHEDULE_NOT_CANCELLABLE). Needs the MailboxSend scope; with a domain token mailboxAddress, when given, must be ' +
    "the message's mailbox (else error 400). " +
    ERRORS_NOTE,
  input: z.object({
    messageId: replyParamsSchema.shape.messageId.describe(`The scheduled message. ${MESSAGE_ID}`),
    mailboxAddress: z
      .string()
      .trim()
      .max(320)
      .optional()
      .describe("Optional: the message's mailbox (a domain token may name it; another mailbox is error 400)."),
  }),
  output: cancelScheduleResultSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  // The route's own steps: the named mailbox checked against the message's (as its `target`), then the cancel.
  run: async ({ messageId, mailboxAddress }, { principal, services }) => {
    await services.messages.assertTargetMailbox(principal, messageId, mailboxAddress);
    return services.sending.cancelSchedule(principal, { messageId });
  },
});
