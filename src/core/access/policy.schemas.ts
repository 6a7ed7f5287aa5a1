import { z } from 'zod';
import { recipientPatternSchema } from './recipient-pattern.js';
import { isAddress, normalizeAddress } from '../base/address.js';

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

/** Approvers per mailbox at most: each held send mails every one of them. */
export const MAX_APPROVER_ADDRESSES = 10;

/**
 * The people mailed a one-time approval link when a send of the mailbox is held (docs/workflow.md,
 * "Approval links"): plain addresses, normalised like every stored address. One listed twice is
 * mailed once (a notice per message and address).
 */
export const approverAddressesSchema = z
  .array(
    z
      .string()
      .max(320)
      .transform(normalizeAddress)
      .refine(isAddress, { message: 'must be an e-mail address (user@domain)' }),
  )
  .max(MAX_APPROVER_ADDRESSES);

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
  /** Mailed a one-time approval link for each held send; empty: approvals only through the API and console. */
  approverAddresses: approverAddressesSchema.default([]),
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
