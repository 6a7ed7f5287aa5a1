import { z } from 'zod';
import { approvalResultSchema } from '../../../core/flows/policy/approval.schemas.js';
import { defineTool } from '../tool.js';
import { ERRORS_NOTE, MAILBOX_ADDRESS_BY_ID, MESSAGE_ID } from './fields.js';

/** POST /api/messages/{messageId}/approve | reject. */
export const decideApprovalTool = defineTool({
  name: 'decide_approval',
  title: 'Approve or reject a held message',
  description:
    'Approve (it is then queued and delivered once) or reject (it never leaves) a message held by the approval gate. ' +
    'Needs the MailboxApprove scope on a mailbox token, or DomainManage on a domain token: an agent token created with ' +
    'the default scopes gets error 403, and the token that made the send (or one it minted) gets error 403 ' +
    'APPROVAL_SELF_FORBIDDEN whatever its scopes, so an agent cannot approve its own mail. Idempotent: the same decision again answers ' +
    'changed false; a different decision after the first is error 409 (the first decision stands). ' +
    ERRORS_NOTE,
  input: z.object({
    messageId: z.string().trim().min(1).max(200).describe(MESSAGE_ID),
    decision: z.enum(['approve', 'reject']).describe('"approve" or "reject".'),
    reason: z.string().trim().max(500).optional().describe('Optional note for the audit trail.'),
    mailboxAddress: z.string().trim().max(320).optional().describe(MAILBOX_ADDRESS_BY_ID),
  }),
  output: approvalResultSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  run: async ({ messageId, decision, reason, mailboxAddress }, { principal, services }) => {
    await services.messages.assertTargetMailbox(principal, messageId, mailboxAddress);
    return services.approvals.decide(
      principal,
      messageId,
      decision === 'approve' ? 'approved' : 'rejected',
      'mcp',
      reason,
    );
  },
});
