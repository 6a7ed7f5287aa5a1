import { z } from 'zod';
import { limitSchema } from '../../base/paging/cursor.js';

/** `approval-link`: a person's decision through a mailed approval link (docs/workflow.md, "Approval links"). */
export const CHANNELS = ['http', 'mcp', 'smtp', 'worker', 'approval-link'] as const;
export type Channel = (typeof CHANNELS)[number];

/** What happened to a send attempt (docs/api.md, "Audit trail"); `released`: held inbound mail let through (docs/screening.md). */
export const DECISIONS = ['accepted', 'refused', 'held', 'approved', 'rejected', 'expired', 'released'] as const;
export type Decision = (typeof DECISIONS)[number];

export const listAuditInputSchema = z.object({
  mailboxAddress: z.string().trim().max(320).optional(),
  limit: limitSchema,
  cursor: z.string().min(1).max(500).optional(),
  /** Only entries with this decision. */
  decision: z.enum(DECISIONS).optional(),
  /** Only entries made through this channel. */
  channel: z.enum(CHANNELS).optional(),
});
export type ListAuditInput = z.infer<typeof listAuditInputSchema>;

export const auditEntrySchema = z.object({
  auditId: z.string(),
  mailboxId: z.string(),
  mailboxAddress: z.string(),
  /** The token that acted (sent, approved, rejected); null for expiry by the worker. */
  tokenId: z.string().nullable(),
  /** The approver's address for a decision through an approval link (channel `approval-link`); else null. */
  actorAddress: z.string().nullable(),
  channel: z.enum(CHANNELS),
  decision: z.enum(DECISIONS),
  /** The policy rule behind the decision, e.g. `blockedRecipients`, `approval:external`; null when none applied. */
  rule: z.string().nullable(),
  /** Human-readable reason: the errMsg of a refusal; never a token or a message body. */
  reason: z.string().nullable(),
  recipientCount: z.number().int(),
  newRecipientCount: z.number().int(),
  messageId: z.string().nullable(),
  /** The message's subject; null when the entry has no message or it was purged. */
  subject: z.string().nullable(),
  /** The message's To, Cc and Bcc addresses; empty without a message. */
  recipients: z.array(z.string()),
  /** The name the acting token was created with; null without a token or once it was deleted. */
  tokenName: z.string().nullable(),
  createdAtTs: z.number().int(),
});
export type AuditEntryView = z.infer<typeof auditEntrySchema>;

export const auditPageSchema = z.object({ items: z.array(auditEntrySchema), nextCursor: z.string().nullable() });
