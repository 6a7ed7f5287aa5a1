import { z } from 'zod';
import { addressSchema } from '../../base/address.js';
import { limitSchema } from '../../base/paging/cursor.js';
import { PASSWORD_LENGTH } from '../../access/login.schemas.js';

/**
 * An ephemeral mailbox's lifetime, one rule for the API and the Mailbox resource: one minute (the
 * sweeper's period, so the data is gone about when it ends) to one year.
 */
export const MAILBOX_TTL_SECONDS = { min: 60, max: 365 * 24 * 3600 } as const;
export const mailboxTtlSecondsSchema = z.number().int().min(MAILBOX_TTL_SECONDS.min).max(MAILBOX_TTL_SECONDS.max);

export const createMailboxInputSchema = z
  .object({
    address: addressSchema.optional(),
    localPart: z
      .string()
      .trim()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+$/, 'must be a valid local part')
      .optional(),
    domainId: z.string().max(40).optional(),
    displayName: z.string().trim().max(200).optional(),
    notes: z.string().max(4000).optional(),
    /** An ephemeral mailbox: it ends this many seconds after creation (docs/workflow.md). */
    ttlSeconds: mailboxTtlSecondsSchema.optional(),
  })
  .strict()
  .refine((v) => v.address !== undefined || v.localPart !== undefined, {
    message: 'address or localPart is required',
    path: ['address'],
  });
export type CreateMailboxInput = z.infer<typeof createMailboxInputSchema>;

export const mailboxViewSchema = z.object({
  mailboxId: z.string(),
  address: z.string(),
  displayName: z.string(),
  /** null: the mailbox does not expire. */
  expiresAtTs: z.number().int().nullable(),
});
export type MailboxView = z.infer<typeof mailboxViewSchema>;

export const mailboxCreatedSchema = z.object({
  mailbox: mailboxViewSchema,
  initialAccessToken: z.string(),
  initialAccessTokenId: z.string(),
  initialAccessTokenExpiresAtTs: z.number().int().nullable(),
  /** The mailbox's end (`ttlSeconds`), the same as `mailbox.expiresAtTs`; null: it does not expire. */
  expiresAtTs: z.number().int().nullable(),
});
export type MailboxCreated = z.infer<typeof mailboxCreatedSchema>;

export const listMailboxesQuerySchema = z.object({ limit: limitSchema, cursor: z.string().max(500).optional() });

export const mailboxPageSchema = z.object({
  items: z.array(mailboxViewSchema),
  nextCursor: z.string().nullable(),
  totalCount: z.number().int(),
});

/**
 * Password length, one rule for the API (set password) and declared resources (passwordSecretRef,
 * core/resources/reconciler.ts): 8 to 1024 characters. Login accepts up to the maximum only, so a
 * wrong guess of any length costs the same single hash.
 */
export { PASSWORD_LENGTH };
export const passwordSchema = z.string().min(PASSWORD_LENGTH.min).max(PASSWORD_LENGTH.max);

export const setPasswordInputSchema = z.object({ password: passwordSchema }).strict();
export const passwordSetSchema = z.object({ mailboxId: z.string(), address: z.string(), passwordSet: z.literal(true) });
