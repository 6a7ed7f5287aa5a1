import type { Scope, TokenKind } from './scopes.js';

/** Who is calling: the verified token, as every channel hands it to the core. */
export interface Principal {
  readonly tokenId: string;
  readonly kind: TokenKind;
  readonly domainId: string;
  readonly domainName: string;
  /** Set for mailbox tokens only. */
  readonly mailboxId: string | null;
  readonly mailboxAddress: string | null;
  /** The bound mailbox of a mailbox token, read with the token (saves a query per request). */
  readonly mailbox: MailboxRef | null;
  readonly scopes: ReadonlySet<Scope>;
  readonly expiresAt: Date | null;
}

/** The mailbox a call acts on, resolved and authorised (see access.ts). */
export interface MailboxRef {
  readonly id: string;
  readonly address: string;
  readonly domainId: string;
  readonly displayName: string;
  /** Sends per minute: the mailbox's own limit, else its domain's; null: the configured default. */
  readonly sendRateLimitPerMinute: number | null;
}

/**
 * What a caller may see. Every query for mailbox-owned rows takes one of these, so a
 * missing visibility check is a type error rather than a leak.
 */
export type Visibility =
  { readonly kind: 'mailbox'; readonly mailboxId: string } | { readonly kind: 'domain'; readonly domainId: string };
