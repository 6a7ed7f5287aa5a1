import { z } from 'zod';
import { draftIdParamsSchema } from '../../../core/state/drafts/draft.schemas.js';
import { sendAcceptedSchema } from '../../../core/flows/sending/send.schemas.js';
import { defineTool } from '../tool.js';
import { idempotencyKeyArgument, SEND_LIMITS_NOTE } from './send-mail.js';
import { DRAFT_ID } from './get-draft.js';

/** POST /api/drafts/{draftId}/send. */
export const sendDraftTool = defineTool({
  name: 'send_draft',
  title: 'Send a draft',
  description:
    'Send a saved draft as it is stored, exactly as send_mail (or reply_message, for a draft with parentMessageId) ' +
    'would send it, with its sendAt when it has one. The draft is removed when the send is accepted (status queued, ' +
    'scheduled or pending_approval; draft.deleted with reason "sent" and the messageId). When it is refused it stays, ' +
    'unchanged: an incomplete draft is error 400 naming the field (no recipient, no body), a recipient the policy ' +
    'refuses is 403, the rate limit 429. A draft changed by someone else while it was being sent is error 409 ' +
    '(DRAFT_CHANGED): read it again with get_draft. Retrying with the same idempotencyKey after success returns the ' +
    "first answer, although the draft is gone. With a domain token mailboxAddress, when given, must be the draft's " +
    'mailbox. ' +
    SEND_LIMITS_NOTE,
  input: z.object({
    draftId: draftIdParamsSchema.shape.draftId.describe(DRAFT_ID),
    mailboxAddress: z
      .string()
      .trim()
      .max(320)
      .optional()
      .describe("Optional: the draft's mailbox (a domain token may name it; another mailbox is error 400)."),
    idempotencyKey: idempotencyKeyArgument,
  }),
  output: sendAcceptedSchema,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  run: ({ draftId, idempotencyKey, mailboxAddress }, { principal, services }) =>
    services.draftSending.send(principal, draftId, { mailboxAddress }, { channel: 'mcp', idempotencyKey }),
});
