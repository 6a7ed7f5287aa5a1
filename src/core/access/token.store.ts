import { sql, type Database, type Sql } from '../../storage/database.js';
import type { Col, Narrow, Row } from '../../storage/rows.js';
import type { Scope, TokenKind } from './scopes.js';
import type { TokenPolicy } from './policy.schemas.js';
import { sendRateLimitSql } from '../base/ratelimit/send-rate-limit.store.js';

/**
 * A token and its ancestors as rows (id, policy, depth: 0 is the token itself, its parent 1, …),
 * as SQL: the chain whose policies narrow what a token may send (bounded at 64 links).
 */
export const policyChainSql = (tokenId: string) => sql`with recursive chain(id, parent_token_id, policy, depth) as (
    select id, parent_token_id, policy, 0 from access_token where id = ${tokenId}
    union all
    select t.id, t.parent_token_id, t.policy, c.depth + 1 from access_token t
      join chain c on t.id = c.parent_token_id where c.depth < 64
  ) select id, policy, depth from chain`;

/** An access_token row as stored (kind, scopes and policy typed as what we write there). */
export type TokenRow = Narrow<Row<'access_token'>, { kind: TokenKind; scopes: Scope[]; policy: TokenPolicy | null }>;

/** A token joined with its domain and mailbox: what authentication needs, in one query. */
export type PrincipalRow = Narrow<
  Row<'access_token', 'id' | 'kind' | 'domain_id' | 'mailbox_id' | 'scopes' | 'expires_at' | 'disabled_at'>,
  { kind: TokenKind; scopes: Scope[] }
> & {
  domain_name: Col<'domain', 'name'>;
  mailbox_address: Col<'mailbox', 'address'> | null;
  mailbox_display_name: Col<'mailbox', 'display_name'> | null;
  mailbox_rate: Col<'mailbox', 'send_rate_limit_per_minute'>;
  domain_disabled: boolean;
  mailbox_disabled: boolean;
  /** An ephemeral mailbox's end: its tokens end with it. */
  mailbox_expires_at: Col<'mailbox', 'expires_at'> | null;
};

export interface NewTokenRow {
  id: string;
  kind: TokenKind;
  domainId: string;
  mailboxId: string | null;
  name: string;
  prefix: string;
  hash: string;
  scopes: Scope[];
  createdSource: string;
  parentTokenId: string | null;
  expiresAt: Date | null;
  cipher: string;
  revealUntil: Date;
  createdAt: Date;
  policy: TokenPolicy | null;
}

/** Which tokens of a mailbox a governance call may see: all, or only those created at or after the caller. */
export interface TokenOwner {
  mailboxId: string;
  notBeforeTokenId: string | null;
}

const laterThan = (owner: TokenOwner) =>
  owner.notBeforeTokenId
    ? sql`and created_at >= (select created_at from access_token where id = ${owner.notBeforeTokenId})`
    : sql``;

type Instant = Date | string | null;

const after = (instant: Instant, now: Date): boolean => instant !== null && new Date(instant).getTime() > now.getTime();

/*
 * The token rules the store owns, each written once with a row form (TypeScript) and, where
 * queries need it, an SQL form beside it. test/tokens/token-validity.test.ts runs both forms over
 * the same rows in every state, so they cannot drift apart.
 */

/**
 * Whether a token authenticates (spec: an invalid, expired or disabled token is 401; docs/api.md,
 * "Brute force and revocation"): not disabled, its domain and (for a mailbox token) its mailbox
 * enabled, not expired. Returns why not, as the client is told, or null when it does.
 */
export function tokenRefusal(
  t: { disabledAt: Instant; expiresAt: Instant; domainDisabled: boolean; mailboxDisabled: boolean },
  now: Date,
): string | null {
  if (t.disabledAt !== null) return 'This access token is disabled.';
  if (t.domainDisabled || t.mailboxDisabled) return 'The mailbox or domain of this token is disabled.';
  return cachedRefusal(t.expiresAt, now);
}

/** The refusal of a principal cached while valid: only time can end it (disabling drops it from the cache). */
export const cachedRefusal = (expiresAt: Instant, now: Date): string | null =>
  expiresAt !== null && !after(expiresAt, now) ? 'This access token has expired.' : null;

/**
 * `tokenRefusal(...) === null` in SQL, for checks over many tokens at once (the real-time hub's
 * revalidation), over `access_token t`, its `domain d` and its own mailbox `tm` (left join).
 */
export const validTokenSql = (now: Date) =>
  sql`(t.disabled_at is null and d.disabled_at is null and tm.disabled_at is null
    and (t.expires_at is null or t.expires_at > ${now}) and (tm.expires_at is null or tm.expires_at > ${now}))`;

/**
 * Whether a stored plaintext may still be revealed (docs/api.md, Tokens: `canRevealPlaintext`):
 * ciphertext kept, not disabled, inside the reveal window and not expired. Reveal and token views
 * use the row form; password login's reuse and the ciphertext sweeper `revealableSql`.
 */
export function isRevealable(
  r: Pick<TokenRow, 'plaintext_cipher' | 'disabled_at' | 'reveal_until' | 'expires_at'>,
  now: Date,
): boolean {
  return (
    r.plaintext_cipher !== null &&
    r.disabled_at === null &&
    after(r.reveal_until, now) &&
    (r.expires_at === null || after(r.expires_at, now))
  );
}

/** `isRevealable` in SQL, over `access_token t`. */
export const revealableSql = (now: Date) =>
  sql`(t.plaintext_cipher is not null and t.disabled_at is null and t.reveal_until > ${now}
    and (t.expires_at is null or t.expires_at > ${now}))`;

export class TokenStore {
  constructor(private readonly db: Database) {}

  principalByHash(hash: string): Promise<PrincipalRow | undefined> {
    return this.db.one(sql<PrincipalRow>`select t.id, t.kind, t.domain_id, d.name as domain_name, t.mailbox_id,
        m.address as mailbox_address, m.display_name as mailbox_display_name,
        ${sendRateLimitSql} as mailbox_rate, t.scopes, t.expires_at, t.disabled_at,
        d.disabled_at is not null as domain_disabled, coalesce(m.disabled_at is not null, false) as mailbox_disabled,
        m.expires_at as mailbox_expires_at
      from access_token t join domain d on d.id = t.domain_id left join mailbox m on m.id = t.mailbox_id
      where t.token_hash = ${hash}`);
  }

  /** Principal rows of several hashes in one query (the per-address lookup lane), by hash. */
  async principalsByHashes(hashes: readonly string[]): Promise<Map<string, PrincipalRow>> {
    const rows = await this.db.rows(sql<PrincipalRow & { token_hash: string }>`select t.id, t.kind, t.domain_id,
        d.name as domain_name, t.mailbox_id, m.address as mailbox_address, m.display_name as mailbox_display_name,
        ${sendRateLimitSql} as mailbox_rate, t.scopes, t.expires_at, t.disabled_at, t.token_hash,
        d.disabled_at is not null as domain_disabled, coalesce(m.disabled_at is not null, false) as mailbox_disabled,
        m.expires_at as mailbox_expires_at
      from access_token t join domain d on d.id = t.domain_id left join mailbox m on m.id = t.mailbox_id
      where t.token_hash = any(${[...hashes]}::text[])`);
    return new Map(rows.map((r) => [r.token_hash, r]));
  }

  async insert(trx: Sql, t: NewTokenRow): Promise<void> {
    await sql`insert into access_token (id, kind, domain_id, mailbox_id, name, token_prefix, token_hash, scopes,
        created_source, parent_token_id, expires_at, plaintext_cipher, reveal_until, created_at, policy)
      values (${t.id}, ${t.kind}, ${t.domainId}, ${t.mailboxId}, ${t.name}, ${t.prefix}, ${t.hash},
        ${t.scopes}::text[], ${t.createdSource}, ${t.parentTokenId}, ${t.expiresAt}, ${t.cipher}, ${t.revealUntil},
        ${t.createdAt}, ${t.policy === null ? null : JSON.stringify(t.policy)}::jsonb)`.execute(trx);
  }

  listMailboxTokens(owner: TokenOwner): Promise<TokenRow[]> {
    return this.db.rows(sql<TokenRow>`select * from access_token where mailbox_id = ${owner.mailboxId}
      and kind = 'mailbox' ${laterThan(owner)} order by created_at desc, id desc limit 1000`);
  }

  findMailboxToken(owner: TokenOwner, tokenId: string): Promise<TokenRow | undefined> {
    return this.db.one(sql<TokenRow>`select * from access_token where id = ${tokenId}
      and mailbox_id = ${owner.mailboxId} and kind = 'mailbox' ${laterThan(owner)}`);
  }

  /**
   * The own policies of a token and its ancestors, root first (the chain a send is narrowed by,
   * docs/api.md "Token policy"). Read at use, so nothing about policy is cached with a principal.
   */
  async policyChain(tokenId: string): Promise<{ id: string; policy: TokenPolicy | null }[]> {
    const rows = await this.db.rows(
      sql<
        Narrow<Row<'access_token', 'id' | 'policy'>, { policy: TokenPolicy | null }> & { depth: number }
      >`${policyChainSql(tokenId)} order by depth desc`,
    );
    return rows.map((r) => ({ id: r.id, policy: r.policy }));
  }

  /** Disabling also erases the ciphertext: a disabled token is never revealable again. */
  async disable(tokenId: string, now: Date): Promise<TokenRow> {
    const row = await this.db.one(sql<TokenRow>`update access_token set disabled_at = coalesce(disabled_at, ${now}),
      plaintext_cipher = null where id = ${tokenId} returning *`);
    return row!;
  }

  async delete(tokenId: string): Promise<void> {
    await this.db.rows(sql`delete from access_token where id = ${tokenId}`);
  }

  /** Erases ciphertext whose reveal window closed; returns how many rows lost it. */
  async eraseClosedCiphertext(now: Date): Promise<number> {
    const rows = await this.db.rows(sql<{ id: string }>`update access_token as t set plaintext_cipher = null
      where t.plaintext_cipher is not null and ${revealableSql(now)} is not true returning t.id`);
    return rows.length;
  }

  async disableAll(
    trx: Sql,
    owner: { mailboxId: string } | { domainId: string; kind: TokenKind },
    now: Date,
  ): Promise<void> {
    const where =
      'mailboxId' in owner
        ? sql`mailbox_id = ${owner.mailboxId}`
        : sql`domain_id = ${owner.domainId} and kind = ${owner.kind}`;
    await sql`update access_token set disabled_at = ${now}, plaintext_cipher = null
      where ${where} and disabled_at is null`.execute(trx);
  }
}

/** Records tokens' last use (time and remote address), never moving a later one back; one statement for the batch. */
export async function recordTokenUses(
  db: Database,
  uses: readonly { id: string; at: Date; ip: string | null }[],
): Promise<void> {
  await db.rows(sql`update access_token t set last_used_at = u.at, last_used_remote_ip = u.ip
      from unnest(${uses.map((u) => u.id)}::text[], ${uses.map((u) => u.at.toISOString())}::timestamptz[], ${uses.map((u) => u.ip)}::text[]) as u(id, at, ip)
      where t.id = u.id and (t.last_used_at is null or t.last_used_at < u.at)`);
}
