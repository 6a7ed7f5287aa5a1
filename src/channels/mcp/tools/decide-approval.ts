import { z } from 'zod';
import { approvalResultSchema } from '../../../core/policy/approval.schemas.js';
import { defineTool } from '../tool.js';
import { ERRORS_NOTE, MESSAGE_ID } from './fields.js';

/** POST /api/messages/{messageId}/approve | reject. */
export const decideApprovalTool = defineTool({
  name: 'decide_approval',
  title: 'Approve or reject a held message',
  description:
    'Approve (it is then queued and delivered once) or reject (it never leaves) a message held by the approval gate. ' +
    'Needs the MailboxApprove scope on a mailbox token, or DomainManage on a domain token: an agent token created with ' +
    'the default scopes gets error 403, so it cannot approve its own mail. Idempotent: the same decision again answers ' +
    'changed false; a different decision after the first is error 409 (the first decision stands). ' +
    ERRORS_NOTE,
  input: z.object({
    messageId: z.string().trim().min(1).max(200).describe(MESSAGE_ID),
    decision: z.enum(['approve', 'reject']).describe('"approve" or "reject".'),
    reason: z.string().trim().max(500).optional().describe('Optional note for the audit trail.'),
  }),
  output: approvalResultSchema,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  run: ({ messageId, decision, reason }, { principal, services }) =>
    services.approvals.decide(principal, messageId, decision === 'approve' ? 'approved' : 'rejected', 'mcp', reason),
});
