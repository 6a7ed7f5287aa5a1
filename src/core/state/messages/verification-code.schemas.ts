import { z } from 'zod';
import { messageSummarySchema } from './message.schemas.js';
import { flagSchema, senderFilterSchema, WAIT_DEFAULT_MS, WAIT_MAX_MS } from './wait.schemas.js';

/** Without sinceTs, codes of the last 10 minutes count: about the life of a one-time code. */
export const CODE_LOOKBACK_MS = 10 * 60_000;

/** MCP get_verification_code and GET /api/messages/verification-code. */
export const verificationCodeInputSchema = z.object({
  mailboxAddress: z.string().trim().max(320).optional(),
  from: senderFilterSchema.optional(),
  subjectContains: z.string().trim().min(1).max(998).optional(),
  requireAuthenticated: flagSchema.default(false),
  sinceTs: z.coerce.number().int().min(0).max(8.64e15).optional(),
  timeoutMs: z.coerce.number().int().min(0).max(WAIT_MAX_MS).default(WAIT_DEFAULT_MS),
});
export type VerificationCodeInput = z.infer<typeof verificationCodeInputSchema>;

export const verificationCodeResultSchema = z.object({
  /** The first code of the newest matching message; null when the wait timed out. */
  code: z.string().nullable(),
  codes: z.array(z.string()),
  /** Its links classified `verification` (confirm / magic-link / reset), for link-based flows. */
  verificationLinks: z.array(z.string()),
  message: messageSummarySchema.nullable(),
  /** Whether the message's sender is authenticated (the same as message.authenticated); null on timeout. */
  authenticated: z.boolean().nullable(),
  /** Set when the message is not authenticated (its code may come from a forger); null otherwise. */
  warning: z.string().nullable(),
  timedOut: z.boolean(),
});
export type VerificationCodeResult = z.infer<typeof verificationCodeResultSchema>;
