import { z } from 'zod';
import { directionSchema, messageSummarySchema } from './message.schemas.js';
import { SENDER_FILTER_MESSAGE, senderFilterOf } from './message-trust.js';

/**
 * Longest wait. Below 60 s on purpose: the MCP SDK client's default request timeout is 60 s and
 * common proxies (nginx proxy_read_timeout) cut idle responses at 60 s, so a full-length wait
 * plus its answer must fit under both.
 */
export const WAIT_MAX_MS = 55_000;
export const WAIT_DEFAULT_MS = 30_000;

/** Event ids are a mailbox's event sequence numbers, as decimal strings (docs/contract.md, Real-time). */
const eventIdSchema = z
  .string()
  .trim()
  .regex(/^\d{1,15}$/, 'must be an eventId (a decimal number as returned by a previous wait or event)');

/** `from` of a wait: a domain or a whole address (message-trust.ts), never a display name. */
export const senderFilterSchema = z
  .string()
  .trim()
  .min(1)
  .max(320)
  .refine((v) => senderFilterOf(v) !== null, SENDER_FILTER_MESSAGE);

/** A flag that arrives as JSON (MCP) or as query text (`true` / `false`). */
export const flagSchema = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);

/**
 * GET /api/messages/wait and the MCP tool wait_for_message. Query strings arrive as text, so
 * timeoutMs is coerced; MCP passes a number and the same schema accepts it.
 */
export const waitInputSchema = z.object({
  mailboxAddress: z.string().trim().max(320).optional(),
  from: senderFilterSchema.optional(),
  subjectContains: z.string().trim().min(1).max(998).optional(),
  requireAuthenticated: flagSchema.default(false),
  direction: directionSchema.default('inbound'),
  sinceEventId: eventIdSchema.optional(),
  timeoutMs: z.coerce.number().int().min(0).max(WAIT_MAX_MS).default(WAIT_DEFAULT_MS),
});
export type WaitInput = z.infer<typeof waitInputSchema>;

export const waitResultSchema = z.object({
  /** The first matching message after sinceEventId, or null when the wait timed out. */
  message: messageSummarySchema.nullable(),
  /**
   * Where to continue: the matching message's event, or (timed out) the newest event looked at.
   * Passing it as sinceEventId never skips and never repeats a message.
   */
  eventId: z.string(),
  timedOut: z.boolean(),
  /** Set when the message is not authenticated (its sender may be forged); null otherwise. */
  warning: z.string().nullable(),
});
export type WaitResult = z.infer<typeof waitResultSchema>;
