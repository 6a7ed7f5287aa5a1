import { AppError } from '../base/errors.js';
import type { Clock } from '../base/time.js';
import type { Principal } from './principal.js';
import { clientKey, isCredentialFailure, type AuthThrottle } from './auth-throttle.js';
import { checkTokenFormat, hashToken } from './token-format.js';
import type { TokenKind } from './scopes.js';
import type { UsageRecorder } from './usage-recorder.js';
import { AuthCache } from './auth-cache.js';
import { cachedRefusal, tokenRefusal, type PrincipalRow, type TokenStore } from './token.store.js';
import { TokenLookupLanes } from './token-lookup-lanes.js';
import { TokenVerdicts } from './token-verdicts.js';

/** Lookup lane tuning (docs/api.md, "Authentication throttling"). */
export const LOOKUP_LANE = { maxBatch: 256, throttledIntervalMs: 250 } as const;

/**
 * Turns a presented access token into a Principal. Every channel (HTTP, MCP, Socket.IO, SMTP AUTH)
 * authenticates here, so validity (unknown, disabled, expired, owner disabled) is decided once.
 */
export class TokenAuthenticator {
  private readonly authCache: AuthCache;
  private readonly verdicts = new TokenVerdicts();
  readonly lanes: TokenLookupLanes<PrincipalRow>;
  /** Direct lookups in flight by token hash: concurrent requests with one token share one query. */
  private readonly loading = new Map<string, Promise<PrincipalRow | undefined>>();
  /**
   * Bumped by every forget: a lookup that began before a disable may have read the token still
   * enabled, so its principal is answered to its own request but never cached.
   */
  private generation = 0;

  constructor(
    private readonly store: TokenStore,
    private readonly clock: Clock,
    private readonly usage: UsageRecorder,
    /** Shared with SMTP AUTH and password login: one failure budget per client address. */
    readonly throttle: AuthThrottle,
    authCacheTtlMs = 0,
  ) {
    this.authCache = new AuthCache(authCacheTtlMs);
    this.lanes = new TokenLookupLanes((hashes) => this.store.principalsByHashes(hashes), LOOKUP_LANE);
  }

  /**
   * Verifies a presented token; any failure is the same 401 (spec: invalid, expired or disabled).
   * A valid token always passes, whatever else its client address sent (docs/contract.md,
   * "Authentication under shared addresses"). With a client address (every channel passes one):
   * - no token: 401, no cost;
   * - malformed (checksum): no query; counts a failure (429 past the budget);
   * - verified in the last AUTH_CACHE_TTL: no query;
   * - valid here recently (TokenVerdicts): looked up directly, as any good token;
   * - known unknown: no query; counts a failure;
   * - anything else: looked up through its address's lane (TokenLookupLanes: one query at a time
   *   per address, spaced out past the budget); a failure counts.
   */
  async authenticate(plaintext: string | undefined | null, remoteIp: string | null): Promise<Principal> {
    if (!plaintext) throw new AppError('UNAUTHENTICATED', 'Missing access token.');
    const kind = checkTokenFormat(plaintext);
    const failure = (detail: string) => new AppError('UNAUTHENTICATED', detail);
    if (!kind) {
      if (remoteIp) return this.throttle.refuse(remoteIp, failure('Malformed access token.'));
      throw failure('Malformed access token.');
    }
    const hash = hashToken(plaintext);
    const now = this.clock.now();
    const generation = this.generation;
    try {
      const cached = this.authCache.get(hash);
      const principal = cached ?? toPrincipal(await this.row(hash, remoteIp), kind, now);
      const refusal = cachedRefusal(principal.expiresAt, now);
      if (refusal) throw failure(refusal);
      // Only a fresh lookup is cached: re-setting on every hit would keep a busy token's entry young
      // forever, and a token revoked on another replica would never be refused here (AUTH_CACHE_TTL).
      if (!cached && generation === this.generation) this.authCache.set(hash, principal);
      this.verdicts.rememberValid(hash, principal.expiresAt);
      this.usage.record(principal.tokenId, remoteIp, now);
      return principal;
    } catch (err) {
      if (!isCredentialFailure(err)) throw err;
      this.verdicts.forget(hash);
      if (remoteIp) return this.throttle.refuse(remoteIp, err);
      throw err;
    }
  }

  /** Drops cached principals: one token (disabled or deleted here) or all (bulk disable). */
  forgetCached(tokenId?: string): void {
    this.generation++;
    // A request arriving from now on must not join a lookup that may predate the change.
    this.loading.clear();
    if (tokenId) this.authCache.forgetToken(tokenId);
    else this.authCache.clear();
  }

  private async row(hash: string, remoteIp: string | null): Promise<PrincipalRow | undefined> {
    if (this.verdicts.isUnknown(hash)) return undefined;
    let row: PrincipalRow | undefined;
    if (!remoteIp || this.verdicts.isValid(hash)) row = await this.direct(hash);
    else {
      const over = (await this.throttle.overBudget(remoteIp)) !== null;
      row = await this.lanes.find(clientKey(remoteIp), hash, over);
    }
    if (!row) this.verdicts.rememberUnknown(hash);
    return row;
  }

  private direct(hash: string): Promise<PrincipalRow | undefined> {
    let pending = this.loading.get(hash);
    if (!pending) {
      const loaded = this.store.principalByHash(hash).finally(() => {
        if (this.loading.get(hash) === loaded) this.loading.delete(hash);
      });
      pending = loaded;
      this.loading.set(hash, pending);
    }
    return pending;
  }
}

/** The principal of a looked-up row, under the one token validity rule (token.store.ts). */
function toPrincipal(row: PrincipalRow | undefined, kind: TokenKind, now: Date): Principal {
  if (!row || row.kind !== kind) throw new AppError('UNAUTHENTICATED', 'Unknown access token.');
  // A token ends with its ephemeral mailbox: the principal carries the earlier end, so a cached
  // principal is refused at the mailbox's expiry as at its own (cachedRefusal on every hit).
  const expiresAt = earliest(row.expires_at, row.mailbox_expires_at);
  const refusal = tokenRefusal(
    {
      disabledAt: row.disabled_at,
      expiresAt,
      domainDisabled: row.domain_disabled,
      mailboxDisabled: row.mailbox_disabled,
    },
    now,
  );
  if (refusal) throw new AppError('UNAUTHENTICATED', refusal);
  return {
    tokenId: row.id,
    kind: row.kind,
    domainId: row.domain_id,
    domainName: row.domain_name,
    mailboxId: row.mailbox_id,
    mailboxAddress: row.mailbox_address,
    mailbox:
      row.mailbox_id && row.mailbox_address
        ? {
            id: row.mailbox_id,
            address: row.mailbox_address,
            domainId: row.domain_id,
            displayName: row.mailbox_display_name ?? '',
            sendRateLimitPerMinute: row.mailbox_rate,
          }
        : null,
    scopes: new Set(row.scopes),
    expiresAt: expiresAt === null ? null : new Date(expiresAt),
  };
}

function earliest(a: Date | string | null, b: Date | string | null): Date | string | null {
  if (a === null) return b;
  if (b === null) return a;
  return new Date(a).getTime() <= new Date(b).getTime() ? a : b;
}
