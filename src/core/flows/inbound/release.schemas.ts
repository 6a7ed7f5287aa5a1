import { z } from 'zod';

export const releaseResultSchema = z.object({
  messageId: z.string(),
  /** True when this call released it; false when it was not held (never, or released before). */
  released: z.boolean(),
});
export type ReleaseResult = z.infer<typeof releaseResultSchema>;
