import { z } from 'zod';

/** A password's length, for login and for setting one (mailboxes, declared resources). */
export const PASSWORD_LENGTH = { min: 8, max: 1024 } as const;

export const loginInputSchema = z
  .object({ mailboxAddress: z.string().max(320), password: z.string().max(PASSWORD_LENGTH.max) })
  .strict();
export const loginResultSchema = z.object({
  accessToken: z.string(),
  tokenId: z.string(),
  tokenPrefix: z.string(),
  scopes: z.array(z.string()),
  expiresAtTs: z.number().int().nullable(),
  mailboxId: z.string(),
  mailboxAddress: z.string(),
  reused: z.boolean(),
});
export type LoginResult = z.infer<typeof loginResultSchema>;
