import { z } from 'zod';
import {
  outgoingFields as common,
  scheduleFields,
  subjectSchema,
  toSchema,
  replyAllSchema,
} from '../../state/mail/send-fields.js';

const needsBody = (v: { bodyText?: string | undefined; bodyHtml?: string | undefined }) =>
  v.bodyText !== undefined || v.bodyHtml !== undefined;
const bodyIssue = { message: 'bodyText or bodyHtml is required', path: ['bodyText'] };

export const sendInputSchema = z
  .object({ ...common, ...scheduleFields, toAddress: toSchema, subject: subjectSchema.default('') })
  .strict()
  .refine(needsBody, bodyIssue);
export type SendInput = z.infer<typeof sendInputSchema>;

export const replyInputSchema = z
  .object({
    ...common,
    ...scheduleFields,
    toAddress: toSchema.optional(),
    subject: subjectSchema.optional(),
    /** Also Cc everyone the parent was addressed to, except this mailbox (docs/workflow.md, "Replies"). */
    replyAll: replyAllSchema,
  })
  .strict()
  .refine(needsBody, bodyIssue);
export type ReplyInput = z.infer<typeof replyInputSchema>;

/** Forward: new recipients, an optional note before the original, the original's attachments kept. */
export const forwardInputSchema = z
  .object({
    ...common,
    toAddress: toSchema,
    subject: subjectSchema.optional(),
  })
  .strict();
export type ForwardInput = z.infer<typeof forwardInputSchema>;

export const replyParamsSchema = z.object({ messageId: z.string().min(1).max(40) });

/** `data` of the 202 answer to send and reply (docs/contract.md, Wire format). */
export const sendAcceptedSchema = z.object({
  messageId: z.string(),
  threadId: z.string(),
  /**
   * `pending_approval`: held by the approval gate until approved or rejected (docs/api.md);
   * `scheduled`: held until sendAtTs, when the policy decides it (docs/workflow.md).
   */
  status: z.enum(['queued', 'pending_approval', 'scheduled']),
  queuedAtTs: z.number().int(),
  /** A scheduled send's due time; absent otherwise. */
  sendAtTs: z.number().int().optional(),
});
export type SendAccepted = z.infer<typeof sendAcceptedSchema>;

/** Idempotency-Key: an opaque client token, visible ASCII, stored per mailbox. */
export const idempotencyKeySchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'must be 1-200 visible ASCII characters');

/** DELETE /api/messages/{messageId}/schedule: a domain token names the mailbox (body or query). */
export const cancelScheduleResultSchema = z.object({
  messageId: z.string(),
  status: z.literal('cancelled'),
  /** True when this call cancelled it; false when it was cancelled before (the call is idempotent). */
  cancelled: z.boolean(),
});
export type CancelScheduleResult = z.infer<typeof cancelScheduleResultSchema>;
