import { z } from 'zod';
import { messagePageSchema } from '../../../core/state/messages/message.schemas.js';
import { limitSchema } from '../../../core/base/paging/cursor.js';
import { defineTool } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_ACTING } from './fields.js';

/** GET /api/messages?approval=pending. */
export const listPendingApprovalsTool = defineTool({
  name: 'list_pending_approvals',
  title: 'List messages awaiting approval',
  description:
    "Mail of one mailbox that the outbound policy's approval gate is holding (status pending_approval), newest first, " +
    'paged like list_messages. Nothing of it has left; a person (or a token with the MailboxApprove scope) decides with ' +
    'decide_approval, and undecided mail expires as rejected after APPROVAL_TTL (72 h by default). Needs the MailboxRead ' +
    'scope. ' +
    ERRORS_NOTE,
  input: z.object({
    mailboxAddress: z.string().trim().max(320).optional().describe(MAILBOX_ADDRESS_ACTING),
    limit: limitSchema.describe('Page size, 1..200. Default 100.'),
    cursor: z.string().min(1).max(500).optional().describe('nextCursor of the previous page, unchanged.'),
  }),
  output: messagePageSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services }) => services.messages.list(principal, { ...input, approval: 'pending' }),
});
