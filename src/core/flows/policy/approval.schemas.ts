import { z } from 'zod';

export const approvalDecisionInputSchema = z
  .object({
    /** Optional note for the audit trail (never shown to recipients). */
    reason: z.string().trim().max(500).optional(),
  })
  .strict();
export type ApprovalDecisionInput = z.infer<typeof approvalDecisionInputSchema>;

/** `data` of approve and reject (docs/api.md, "Approval gate"). */
export const approvalResultSchema = z.object({
  messageId: z.string(),
  threadId: z.string(),
  mailboxId: z.string(),
  approvalStatus: z.enum(['pending', 'approved', 'rejected', 'expired']),
  decidedAtTs: z.number().int().nullable(),
  decidedByTokenId: z.string().nullable(),
  deliveryStatus: z.string().nullable(),
  /** False when this call found the same decision already made (idempotent replay). */
  changed: z.boolean(),
});
export type ApprovalResult = z.infer<typeof approvalResultSchema>;
