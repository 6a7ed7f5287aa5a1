import { z } from 'zod';

// Approval links (docs/api.md, "Approval links"; docs/workflow.md): the public routes' shapes.

/** The credential travels in the body, never in a path or query: it stays out of logs and traces. */
const credential = z
  .string()
  .min(1)
  .max(200)
  .describe('The credential from the fragment of the mailed link (`#/approve/<credential>`).');

export const approvalLinkInputSchema = z.object({ credential }).strict();
export type ApprovalLinkInput = z.infer<typeof approvalLinkInputSchema>;

export const approvalLinkDecisionInputSchema = z
  .object({
    credential,
    decision: z.enum(['approve', 'reject']),
    /** Kept in the audit trail with the approver's address (never shown to recipients). */
    reason: z.string().trim().max(500).optional(),
  })
  .strict();
export type ApprovalLinkDecisionInput = z.infer<typeof approvalLinkDecisionInputSchema>;

/** Bodies longer than this are shown cut (`bodyTruncated`); the mail itself is sent whole. */
export const APPROVAL_VIEW_BODY_CHARS = 100_000;

/** What the approval page shows of the held message: text only, every field as the agent wrote it. */
export const approvalLinkViewSchema = z.object({
  messageId: z.string(),
  mailboxAddress: z.string(),
  /** The approver this link was mailed to (the audit names them with the decision). */
  approverAddress: z.string(),
  subject: z.string(),
  fromAddress: z.string(),
  fromDisplayName: z.string(),
  toAddresses: z.array(z.string()),
  ccAddresses: z.array(z.string()),
  bccAddresses: z.array(z.string()),
  /** The text body; for HTML-only mail, the text of the HTML. */
  bodyText: z.string(),
  bodyTruncated: z.boolean(),
  attachments: z.array(z.object({ filename: z.string(), contentType: z.string(), sizeBytes: z.number().int() })),
  /** The rule that held it (e.g. `approval:external`) and the audit's reason; null once the audit entry is gone. */
  rule: z.string().nullable(),
  reason: z.string().nullable(),
  /** The name of the token that sent it (the agent); null without one or once it was deleted. */
  tokenName: z.string().nullable(),
  heldAtTs: z.number().int(),
  /** When the hold, and this link with it, expires (APPROVAL_TTL after the hold). */
  expiresAtTs: z.number().int(),
  /** `pending` until decided; anything else: decided already (by a token, another link, or expiry). */
  approvalStatus: z.enum(['pending', 'approved', 'rejected', 'expired']),
  decidedAtTs: z.number().int().nullable(),
});
export type ApprovalLinkView = z.infer<typeof approvalLinkViewSchema>;
