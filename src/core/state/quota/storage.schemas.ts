import { z } from 'zod';

/** A quota in bytes; null: none of its own (the mailbox falls back to the domain default, the domain to unlimited). */
const quotaBytes = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable();

export const mailboxStorageSchema = z.object({
  mailboxId: z.string(),
  mailboxAddress: z.string(),
  /** Bytes the mailbox's live messages occupy (raw, bodies, attachments). */
  usedBytes: z.number().int(),
  /** The effective quota: the mailbox's own, else the domain default; null: unlimited. */
  quotaBytes: z.number().int().nullable(),
  /** The mailbox's own quota; null: the domain default applies. */
  mailboxQuotaBytes: z.number().int().nullable(),
  domainDefaultQuotaBytes: z.number().int().nullable(),
  /** Uploads no send has claimed yet; they count against the quota once a send claims them. */
  pendingUploads: z.number().int(),
  pendingUploadBytes: z.number().int(),
});
export type MailboxStorage = z.infer<typeof mailboxStorageSchema>;

export const setMailboxStorageInputSchema = z.strictObject({ storageQuotaBytes: quotaBytes });
export type SetMailboxStorageInput = z.infer<typeof setMailboxStorageInputSchema>;

export const domainStorageSchema = z.object({
  domainId: z.string(),
  domain: z.string(),
  /** Quota of every mailbox of the domain that sets none; null: unlimited. */
  defaultStorageQuotaBytes: z.number().int().nullable(),
  /** Sum of the used bytes of the domain's mailboxes. */
  usedBytes: z.number().int(),
});
export type DomainStorage = z.infer<typeof domainStorageSchema>;

export const setDomainStorageInputSchema = z.strictObject({ defaultStorageQuotaBytes: quotaBytes });
export type SetDomainStorageInput = z.infer<typeof setDomainStorageInputSchema>;
