import { z } from 'zod';
import { recipientPatternSchema } from './recipient-pattern.js';

// The outbound policy model (docs/contract.md, "Outbound policy"; docs/api.md, "Outbound policy").

export const APPROVAL_MODES = ['none', 'external', 'new-recipients', 'all'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];
export const approvalModeSchema = z.enum(APPROVAL_MODES);

const patterns = z.array(recipientPatternSchema).max(500);

/** Inbound mail screened at or above holdAtScore is held from agent reads until released (docs/screening.md); null: never. */
export const inboundScreeningSchema = z
  .object({ holdAtScore: z.number().min(0).max(1).nullable().default(null) })
  .strict();
export type InboundScreeningPolicy = z.infer<typeof inboundScreeningSchema>;
const limit = z.number().int().min(0).max(100_000).nullable();

/** A mailbox's policy as stored and shown: every field present, defaults filled in. */
export const mailboxPolicySchema = z.object({
  /** Empty: every recipient allowed (subject to the block list). */
  allowedRecipients: patterns.default([]),
  blockedRecipients: patterns.default([]),
  /** Null: only MAX_RECIPIENTS applies. */
  maxRecipientsPerMessage: limit.default(null),
  /** Recipients this mailbox never sent to or received from, per rolling 24 h; null: unlimited. */
  maxNewRecipientsPerDay: limit.default(null),
  /** False: only recipients in the mailbox's own domain (and its subdomains). */
  externalSending: z.boolean().default(true),
  approval: approvalModeSchema.default('none'),
  autoReplyGuard: z.boolean().default(true),
  inboundScreening: inboundScreeningSchema.default({ holdAtScore: null }),
});
export type MailboxPolicy = z.infer<typeof mailboxPolicySchema>;

/** PUT /api/domain/mailboxes/{mailboxId}/policy and the manifest's `spec.policy`: omitted fields take defaults. */
export const mailboxPolicyInputSchema = mailboxPolicySchema.strict();
export type MailboxPolicyInput = z.input<typeof mailboxPolicyInputSchema>;

export const DEFAULT_MAILBOX_POLICY: MailboxPolicy = mailboxPolicySchema.parse({});

/**
 * A token's own narrowing, given on creation: the recipient fields and `approval`. An omitted
 * field inherits; a given one must lie within the creating token's policy (else 400).
 */
export const tokenPolicySchema = z
  .object({
    allowedRecipients: patterns.optional(),
    blockedRecipients: patterns.optional(),
    maxRecipientsPerMessage: z.number().int().min(0).max(100_000).optional(),
    maxNewRecipientsPerDay: z.number().int().min(0).max(100_000).optional(),
    externalSending: z.boolean().optional(),
    approval: approvalModeSchema.optional(),
  })
  .strict();
export type TokenPolicy = z.infer<typeof tokenPolicySchema>;

/** A token record's `policy`: what it was created with (null: none, it inherits everything). */
export const tokenPolicyViewSchema = tokenPolicySchema.nullable();

export const mailboxPolicyViewSchema = mailboxPolicySchema.extend({
  mailboxId: z.string(),
  mailboxAddress: z.string(),
});
export type MailboxPolicyView = z.infer<typeof mailboxPolicyViewSchema>;
