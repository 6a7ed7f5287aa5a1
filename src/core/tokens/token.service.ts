import { AppError, notFound } from '../errors.js';
import { ID_PREFIX, newId } from '../ids.js';
import { toTs, type Clock } from '../time.js';
import type { Logger } from '../logger.js';
import type { Principal } from '../auth/principal.js';
import { requireDomainToken, requireScope, resolveDomainMailboxById } from '../auth/access.js';
import { sql, type Database, type Sql } from '../../storage/database.js';
import { TokenCipher } from './token-cipher.js';
import { checkTokenFormat, hashToken, mintTokenPlaintext, tokenDisplayPrefix } from './token-format.js';
import { type Scope, type TokenKind, MAILBOX_TOKEN_SCOPES } from './scopes.js';
import type { CreateTokenInput } from './token.schemas.js';
import type { UsageRecorder } from './usage-recorder.js';
import { AuthCache } from './auth-cache.js';
import { clientKey, type AuthThrottle } from '../auth/auth-throttle.js';

// Defined with the other wire shapes; re-exported because callers import it from here.
export { createTokenInputSchema, type CreateTokenInput } from './token.schemas.js';

export type CreatedSource = 'bootstrap' | 'self' | 'domain' | 'login' | 'resource';

export interface TokenRecordView {
  tokenId: string; tokenName: string; tokenPrefix: string; scopes: Scope[]; createdSource: string;
  expiresAtTs: number | null; disabledAtTs: number | null; lastUsedAtTs: number | null;
  lastUsedRemoteIp: string | null; canRevealPlaintext: boolean; createdAtTs: number;
}

export interface TokenCreatedView {
  tokenId: string; tokenName: string; tokenPrefix: string; scopes: Scope[]; createdSource: string;
  accessToken: string; expiresAtTs: number | null; createdAtTs: number;
}

export interface MintSpec {
  kind: TokenKind;
  domainId: string;
  mailboxId: string | null;
  name: string;
  scopes: readonly Scope[];
  expiresAt: Date | null;
  createdSource: CreatedSource;
  parentTokenId: string | null;
}

type TokenRow = {
  id: string; kind: TokenKind; domain_id: string; mailbox_id: string | null; name: string; token_prefix: string;
  scopes: Scope[]; created_source: string; parent_token_id: string | null; expires_at: string | null;
  disabled_at: string | null; last_used_at: string | null; last_used_remote_ip: string | null;
  plaintext_cipher: string | null; reveal_until: string | null; created_at: string;
};

/** The owner whose tokens a governance call manages, and the token it acts with. */
export interface Governance { mailboxId: string; caller: Principal; onlyLaterThanCaller: boolean }

export interface TokenServiceOptions {
  revealWindowMs: number;
  defaultTtlMs: number;
  authCacheTtlMs?: number;
  /** The credential-failure budget per client address that `authenticate` spends and enforces. */
  throttle: AuthThrottle;
}

/**
 * Minting, authentication and governance of access tokens. Every channel authenticates through
 * `authenticate`; both the mailbox self-governance routes and the domain routes end in the same
 * `list/create/reveal/disable/remove` so the subset and expiry rules exist once.
 */
export class TokenService {
  constructor(
    private readonly db: Database,
    private readonly cipher: TokenCipher,
    private readonly clock: Clock,
    private readonly usage: UsageRecorder,
    private readonly log: Logger,
    private readonly options: TokenServiceOptions,
  ) {
    this.authCache = new AuthCache(options.authCacheTtlMs ?? 0);
    this.throttle = options.throttle;
  }

  private readonly authCache: AuthCache;
  /** Lookups in flight by token hash and client key (see authenticate). */
  private readonly verifying = new Map<string, Promise<Principal>>();
  /** Shared with SMTP AUTH and password login: one failure budget per client address. */
  readonly throttle: AuthThrottle;

  /**
   * Verifies a presented token; any failure is the same 401 (spec: invalid, expired or disabled).
   *
   * With a client address (every channel passes one) the credential-failure budget applies
   * (docs/api.md, "Brute force and revocation"): an address past its budget gets AUTH_THROTTLED
   * (429) before the token is looked at, even a good one; a presented token that fails (malformed,
   * unknown, disabled, expired) costs the address one point. A missing token costs nothing, as
   * there is nothing to guess with. A token verified in the last AUTH_CACHE_TTL costs no point and
   * no query; concurrent requests of one address with the same uncached token share one lookup.
   */
  async authenticate(plaintext: string | undefined | null, remoteIp: string | null): Promise<Principal> {
    if (!plaintext) throw new AppError('UNAUTHENTICATED', 'Missing access token.');
    if (!remoteIp) return this.verify(plaintext, null);
    await this.throttle.assertAllowed(remoteIp);
    const cached = this.cachedPrincipal(plaintext);
    if (cached) {
      this.usage.record(cached.tokenId, remoteIp, this.clock.now());
      return cached;
    }
    const key = `${hashToken(plaintext)}|${clientKey(remoteIp)}`;
    let pending = this.verifying.get(key);
    if (!pending) {
      pending = this.throttle.attempt(remoteIp, () => this.verify(plaintext, remoteIp)).finally(() => this.verifying.delete(key));
      this.verifying.set(key, pending);
    }
    return pending;
  }

  /** A cached principal of a well-formed token that has not expired; anything else needs verify. */
  private cachedPrincipal(plaintext: string): Principal | undefined {
    if (!checkTokenFormat(plaintext)) return undefined;
    const principal = this.authCache.get(hashToken(plaintext));
    return principal && !(principal.expiresAt && principal.expiresAt <= this.clock.now()) ? principal : undefined;
  }

  private async verify(plaintext: string, remoteIp: string | null): Promise<Principal> {
    const kind = checkTokenFormat(plaintext);
    if (!kind) throw new AppError('UNAUTHENTICATED', 'Malformed access token.');
    const hash = hashToken(plaintext);
    const now = this.clock.now();
    const principal = this.authCache.get(hash) ?? (await this.loadPrincipal(hash, kind));
    if (principal.expiresAt && principal.expiresAt <= now) throw new AppError('UNAUTHENTICATED', 'This access token has expired.');
    this.authCache.set(hash, principal);
    this.usage.record(principal.tokenId, remoteIp, now);
    return principal;
  }

  /** Drops cached principals: one token (disabled or deleted here) or all (bulk disable). */
  forgetCached(tokenId?: string): void {
    if (tokenId) this.authCache.forgetToken(tokenId);
    else this.authCache.clear();
  }

  private async loadPrincipal(hash: string, kind: TokenKind): Promise<Principal> {
    const row = await this.db.one(sql<{
      id: string; kind: TokenKind; domain_id: string; domain_name: string; mailbox_id: string | null;
      mailbox_address: string | null; mailbox_display_name: string | null; mailbox_rate: number | null;
      scopes: Scope[]; expires_at: string | null; disabled_at: string | null;
      domain_disabled: boolean; mailbox_disabled: boolean;
    }>`select t.id, t.kind, t.domain_id, d.name as domain_name, t.mailbox_id, m.address as mailbox_address,
        m.display_name as mailbox_display_name, m.send_rate_limit_per_minute as mailbox_rate,
        t.scopes, t.expires_at, t.disabled_at, d.disabled_at is not null as domain_disabled,
        coalesce(m.disabled_at is not null, false) as mailbox_disabled
      from access_token t join domain d on d.id = t.domain_id left join mailbox m on m.id = t.mailbox_id
      where t.token_hash = ${hash}`);
    if (!row || row.kind !== kind) throw new AppError('UNAUTHENTICATED', 'Unknown access token.');
    if (row.disabled_at) throw new AppError('UNAUTHENTICATED', 'This access token is disabled.');
    if (row.domain_disabled || row.mailbox_disabled) throw new AppError('UNAUTHENTICATED', 'The mailbox or domain of this token is disabled.');
    return {
      tokenId: row.id,
      kind: row.kind,
      domainId: row.domain_id,
      domainName: row.domain_name,
      mailboxId: row.mailbox_id,
      mailboxAddress: row.mailbox_address,
      mailbox: row.mailbox_id && row.mailbox_address
        ? { id: row.mailbox_id, address: row.mailbox_address, domainId: row.domain_id, displayName: row.mailbox_display_name ?? '', sendRateLimitPerMinute: row.mailbox_rate }
        : null,
      scopes: new Set(row.scopes),
      expiresAt: row.expires_at ? new Date(row.expires_at) : null,
    };
  }

  /** Writes a new token inside the caller's transaction and returns its one-time plaintext. */
  async mint(trx: Sql, spec: MintSpec): Promise<TokenCreatedView> {
    const id = newId(ID_PREFIX.token);
    const plaintext = mintTokenPlaintext(spec.kind);
    const now = this.clock.now();
    const revealUntil = new Date(Math.min(now.getTime() + this.options.revealWindowMs, spec.expiresAt?.getTime() ?? Infinity));
    const scopes = [...new Set(spec.scopes)];
    await sql`insert into access_token (id, kind, domain_id, mailbox_id, name, token_prefix, token_hash, scopes,
        created_source, parent_token_id, expires_at, plaintext_cipher, reveal_until, created_at)
      values (${id}, ${spec.kind}, ${spec.domainId}, ${spec.mailboxId}, ${spec.name}, ${tokenDisplayPrefix(plaintext)},
        ${hashToken(plaintext)}, ${scopes}::text[], ${spec.createdSource}, ${spec.parentTokenId}, ${spec.expiresAt},
        ${this.cipher.encrypt(plaintext, id)}, ${revealUntil}, ${now})`.execute(trx);
    return {
      tokenId: id, tokenName: spec.name, tokenPrefix: tokenDisplayPrefix(plaintext), scopes, createdSource: spec.createdSource,
      accessToken: plaintext, expiresAtTs: toTs(spec.expiresAt), createdAtTs: now.getTime(),
    };
  }

  /** Expiry of a new child token: explicit (never past the caller's) or min(default TTL, caller's). */
  childExpiry(caller: Principal, expiresAtTs: number | null | undefined): Date {
    const now = this.clock.now().getTime();
    const ceiling = caller.expiresAt?.getTime() ?? Infinity;
    if (expiresAtTs === undefined || expiresAtTs === null) return new Date(Math.min(now + this.options.defaultTtlMs, ceiling));
    if (expiresAtTs <= now) throw new AppError('EXPIRY_INVALID', 'expiresAtTs must lie in the future (Unix milliseconds).');
    if (expiresAtTs > ceiling) throw new AppError('EXPIRY_INVALID', 'expiresAtTs must not be later than the expiry of the token creating it.');
    return new Date(expiresAtTs);
  }

  // ---- governance: the mailbox self routes and the domain routes share these ----

  /** Mailbox token + TokenManage: manages its own mailbox's tokens created at or after itself. */
  self(principal: Principal): Governance {
    if (principal.kind !== 'mailbox') throw new AppError('TOKEN_KIND_FORBIDDEN', 'Token self-governance needs a mailbox token; a domain token uses /api/domain/mailboxes/{mailboxId}/access-tokens.');
    requireScope(principal, 'TokenManage');
    return { mailboxId: principal.mailboxId!, caller: principal, onlyLaterThanCaller: true };
  }

  /**
   * Domain token + DomainManage, for a mailbox already resolved inside the token's domain.
   * The kind and scope are asserted again here so no caller can skip them.
   */
  domain(principal: Principal, mailboxId: string): Governance {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    return { mailboxId, caller: principal, onlyLaterThanCaller: false };
  }

  /**
   * The domain routes' entry: kind and scope (403) before the lookup, then the mailbox by id
   * inside the caller's own domain (another domain's or unknown id: the same 404).
   */
  async domainMailbox(principal: Principal, mailboxId: string): Promise<Governance> {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    const mailbox = await resolveDomainMailboxById(this.db, principal, mailboxId);
    return this.domain(principal, mailbox.id);
  }

  async list(g: Governance): Promise<TokenRecordView[]> {
    const rows = await this.db.rows(sql<TokenRow>`select * from access_token where mailbox_id = ${g.mailboxId}
      and kind = 'mailbox' ${this.laterClause(g)} order by created_at desc, id desc limit 1000`);
    return rows.map((r) => this.view(r));
  }

  async create(g: Governance, input: CreateTokenInput): Promise<TokenCreatedView> {
    const granted = g.caller.scopes;
    const beyond = input.scopes.filter((s) => !granted.has(s) || !MAILBOX_TOKEN_SCOPES.includes(s));
    if (beyond.length > 0) throw new AppError('SCOPE_NOT_GRANTABLE', `Cannot grant ${beyond.join(', ')}: a new mailbox token may only carry scopes its creator holds (DomainManage never).`);
    const expiresAt = this.childExpiry(g.caller, input.expiresAtTs);
    const domainId = g.caller.domainId;
    return this.db.tx((trx) => this.mint(trx, {
      kind: 'mailbox', domainId, mailboxId: g.mailboxId, name: input.tokenName, scopes: input.scopes, expiresAt,
      createdSource: g.onlyLaterThanCaller ? 'self' : 'domain', parentTokenId: g.caller.tokenId,
    }));
  }

  async reveal(g: Governance, tokenId: string, remoteIp: string | null): Promise<{ tokenId: string; accessToken: string }> {
    const row = await this.find(g, tokenId);
    if (!this.revealable(row)) throw new AppError('TOKEN_NOT_REVEALABLE');
    if (g.onlyLaterThanCaller) this.assertNoEscalation(g.caller, row);
    const accessToken = this.cipher.decrypt(row.plaintext_cipher!, row.id);
    this.log.info('token.revealed', { tokenId: row.id, mailboxId: row.mailbox_id, byTokenId: g.caller.tokenId, remoteIp });
    return { tokenId: row.id, accessToken };
  }

  async disable(g: Governance, tokenId: string): Promise<TokenRecordView> {
    await this.find(g, tokenId);
    const now = this.clock.now();
    // Disabling also erases the ciphertext: a disabled token is never revealable again.
    const row = await this.db.one(sql<TokenRow>`update access_token set disabled_at = coalesce(disabled_at, ${now}),
      plaintext_cipher = null where id = ${tokenId} returning *`);
    this.forgetCached(tokenId);
    this.log.info('token.disabled', { tokenId, byTokenId: g.caller.tokenId });
    return this.view(row!);
  }

  async remove(g: Governance, tokenId: string): Promise<{ tokenId: string; deleted: true }> {
    await this.find(g, tokenId);
    await this.db.rows(sql`delete from access_token where id = ${tokenId}`);
    this.forgetCached(tokenId);
    this.log.info('token.deleted', { tokenId, byTokenId: g.caller.tokenId });
    return { tokenId, deleted: true };
  }

  /** Erases ciphertext whose reveal window closed; reveal checks the window anyway. */
  async sweepExpiredCiphertext(): Promise<number> {
    const now = this.clock.now();
    const rows = await this.db.rows(sql<{ id: string }>`update access_token set plaintext_cipher = null
      where plaintext_cipher is not null and (reveal_until <= ${now} or disabled_at is not null or expires_at <= ${now})
      returning id`);
    return rows.length;
  }

  /** Disables every token of a mailbox or domain (declared resource deleted). */
  async disableAll(trx: Sql, owner: { mailboxId: string } | { domainId: string; kind: TokenKind }): Promise<void> {
    const now = this.clock.now();
    if ('mailboxId' in owner) {
      await sql`update access_token set disabled_at = ${now}, plaintext_cipher = null where mailbox_id = ${owner.mailboxId} and disabled_at is null`.execute(trx);
    } else {
      await sql`update access_token set disabled_at = ${now}, plaintext_cipher = null where domain_id = ${owner.domainId} and kind = ${owner.kind} and disabled_at is null`.execute(trx);
    }
    // Bulk disable (declared resource deleted): every cached principal may be affected.
    this.forgetCached();
  }

  private laterClause(g: Governance) {
    return g.onlyLaterThanCaller
      ? sql`and created_at >= (select created_at from access_token where id = ${g.caller.tokenId})`
      : sql``;
  }

  private async find(g: Governance, tokenId: string): Promise<TokenRow> {
    const row = await this.db.one(sql<TokenRow>`select * from access_token where id = ${tokenId}
      and mailbox_id = ${g.mailboxId} and kind = 'mailbox' ${this.laterClause(g)}`);
    if (!row) throw notFound('Token');
    return row;
  }

  /**
   * Revealing a token hands over everything it can do, so a mailbox token may reveal only what
   * it could have created itself: the creation rule (subset of scopes, expiry not later than the
   * caller's) applied to reveal. Without it a narrow TokenManage token could reveal a later,
   * wider token (for example one minted by password login) and escalate.
   */
  private assertNoEscalation(caller: Principal, r: TokenRow): void {
    const beyond = r.scopes.filter((s) => !caller.scopes.has(s));
    if (beyond.length > 0) throw new AppError('SCOPE_MISSING', `Revealing this token would grant ${beyond.join(', ')}, which the calling token lacks.`);
    const ceiling = caller.expiresAt?.getTime() ?? Infinity;
    const expiry = r.expires_at === null ? Infinity : new Date(r.expires_at).getTime();
    if (expiry > ceiling) throw new AppError('SCOPE_MISSING', 'Revealing this token would outlive the calling token.');
  }

  private revealable(r: TokenRow): boolean {
    const now = this.clock.now().getTime();
    return r.plaintext_cipher !== null && r.disabled_at === null
      && r.reveal_until !== null && new Date(r.reveal_until).getTime() > now
      && (r.expires_at === null || new Date(r.expires_at).getTime() > now);
  }

  view(r: TokenRow): TokenRecordView {
    return {
      tokenId: r.id, tokenName: r.name, tokenPrefix: r.token_prefix, scopes: r.scopes, createdSource: r.created_source,
      expiresAtTs: toTs(r.expires_at), disabledAtTs: toTs(r.disabled_at), lastUsedAtTs: toTs(r.last_used_at),
      lastUsedRemoteIp: r.last_used_remote_ip, canRevealPlaintext: this.revealable(r), createdAtTs: toTs(r.created_at)!,
    };
  }
}
