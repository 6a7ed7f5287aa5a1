import { z } from 'zod';

/** Scope names exactly as the spec writes them. */
export const SCOPES = ['MailboxRead', 'MailboxSend', 'AttachmentWrite', 'TokenManage', 'MailboxDelete', 'DomainManage'] as const;
export type Scope = (typeof SCOPES)[number];
export const scopeSchema = z.enum(SCOPES);

/** What password login mints (spec, Password login rule 3). */
export const DEFAULT_INTEGRATION_SCOPES: readonly Scope[] = ['MailboxRead', 'MailboxSend', 'AttachmentWrite', 'TokenManage', 'MailboxDelete'];

/** A mailbox token can never hold DomainManage; a domain token holds every scope. */
export const MAILBOX_TOKEN_SCOPES: readonly Scope[] = DEFAULT_INTEGRATION_SCOPES;
export const DOMAIN_TOKEN_SCOPES: readonly Scope[] = SCOPES;

export type TokenKind = 'mailbox' | 'domain';
