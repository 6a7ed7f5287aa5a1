import { z } from 'zod';
import { EVENT_TYPES } from '../../../types/mailbox-event.js';

/** POST /api/domain/webhooks and /api/mailbox/webhooks (docs/contract.md, Webhooks). */
export const createWebhookInputSchema = z
  .object({
    url: z.string().trim().min(1).max(2048),
    /** Omitted: every event type, present and future. */
    eventTypes: z.array(z.enum(EVENT_TYPES)).min(1).max(EVENT_TYPES.length).optional(),
    /** Omitted: every mailbox in the token's reach (its domain, or its own mailbox). */
    mailboxAddresses: z.array(z.string().trim().min(1).max(320)).min(1).max(1000).optional(),
  })
  .strict();
export type CreateWebhookInput = z.infer<typeof createWebhookInputSchema>;

export const webhookIdParamsSchema = z.object({ webhookId: z.string().trim().min(1).max(200) });

const ts = z.number().int();

export const webhookViewSchema = z.object({
  webhookId: z.string(),
  url: z.string(),
  /** null: every event type. */
  eventTypes: z.array(z.string()).nullable(),
  /** null: every mailbox the webhook's owner can see. */
  mailboxAddresses: z.array(z.string()).nullable(),
  /** `domain` (made with a domain token) or `mailbox` (made with a mailbox token, its own mailbox only). */
  scope: z.enum(['domain', 'mailbox']),
  createdAtTs: ts,
  /** Set when it was disabled after failing for a day; nothing is sent after. */
  disabledAtTs: ts.nullable(),
  disabledReason: z.string().nullable(),
  /** Start of the current run of failed attempts; null while healthy. */
  failingSinceTs: ts.nullable(),
  lastSuccessAtTs: ts.nullable(),
  lastFailureAtTs: ts.nullable(),
  lastError: z.string().nullable(),
});
export type WebhookView = z.infer<typeof webhookViewSchema>;

/** The creation answer: the view plus the signing secret, shown this once. */
export const createdWebhookSchema = webhookViewSchema.extend({ secret: z.string() });
export type CreatedWebhook = z.infer<typeof createdWebhookSchema>;

export const webhookListSchema = z.object({ items: z.array(webhookViewSchema) });
export const webhookDeletedSchema = z.object({ webhookId: z.string(), deleted: z.literal(true) });
