import { z } from 'zod';

/** POST /api/messages/{messageId}/release: a domain token names the mailbox (body or query). */
export const releaseBodySchema = z.object({ mailboxAddress: z.string().trim().max(320).optional() }).strict();

export const releaseResultSchema = z.object({
  messageId: z.string(),
  /** True when this call released it; false when it was not held (never, or released before). */
  released: z.boolean(),
});
export type ReleaseResult = z.infer<typeof releaseResultSchema>;
