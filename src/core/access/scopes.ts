import { z } from 'zod';

/** Scope names exactly as the spec writes them. */
export const SCOPES = [
  'MailboxRead',
  'MailboxSend',
  'AttachmentWrite',
  'TokenManage',
  'MailboxDelete',
  'DomainManage',
  // Approves or rejects held messages (docs/api.md, "Approval gate"); never in a default set.
  'MailboxApprove',
  // Manages the mailbox's webhooks (docs/api.md, "Webhooks"); never in a default set.
  'WebhookManage',
] as const;
export type Scope = (typeof SCOPES)[number];
export const scopeSchema = z.enum(SCOPES);

/** What password login mints (spec, Password login rule 3). */
export const DEFAULT_INTEGRATION_SCOPES: readonly Scope[] = [
  'MailboxRead',
  'MailboxSend',
  'AttachmentWrite',
  'TokenManage',
  'MailboxDelete',
];

/**
 * A mailbox token can never hold DomainManage; a domain token holds every scope. MailboxApprove
 * and WebhookManage are grantable to a mailbox token but in neither the integration set nor a
 * bootstrap token: an agent's token cannot approve its own held mail unless a human granted it
 * (docs/api.md, "Approval gate"), and webhooks are granted through the domain token routes.
 */
export const MAILBOX_TOKEN_SCOPES: readonly Scope[] = [
  ...DEFAULT_INTEGRATION_SCOPES,
  'MailboxApprove',
  'WebhookManage',
];
export const DOMAIN_TOKEN_SCOPES: readonly Scope[] = SCOPES;

export type TokenKind = 'mailbox' | 'domain';
