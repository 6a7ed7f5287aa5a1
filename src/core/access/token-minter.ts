import { AppError } from '../base/errors.js';
import { ID_PREFIX, newId } from '../base/ids.js';
import { toTs, type Clock } from '../base/time.js';
import type { Principal } from './principal.js';
import type { Sql } from '../../storage/database.js';
import type { TokenCipher } from './token-cipher.js';
import { hashToken, mintTokenPlaintext, tokenDisplayPrefix } from './token-format.js';
import type { TokenStore } from './token.store.js';
import type { MintSpec, TokenCreatedView } from './token.views.js';

/**
 * Writes new tokens. Every path that creates one (mailbox bootstrap, self and domain governance,
 * password login, declared resources) mints here, so the stored shape (hash, prefix, reveal
 * ciphertext and window) and the expiry rule for children exist once.
 */
export class TokenMinter {
  constructor(
    private readonly store: TokenStore,
    private readonly cipher: TokenCipher,
    private readonly clock: Clock,
    private readonly options: { revealWindowMs: number; defaultTtlMs: number },
  ) {}

  /** Writes a new token inside the caller's transaction and returns its one-time plaintext. */
  async mint(trx: Sql, spec: MintSpec): Promise<TokenCreatedView> {
    const id = newId(ID_PREFIX.token);
    const plaintext = mintTokenPlaintext(spec.kind);
    const now = this.clock.now();
    const revealUntil = new Date(
      Math.min(now.getTime() + this.options.revealWindowMs, spec.expiresAt?.getTime() ?? Infinity),
    );
    const scopes = [...new Set(spec.scopes)];
    const prefix = tokenDisplayPrefix(plaintext);
    await this.store.insert(trx, {
      id,
      kind: spec.kind,
      domainId: spec.domainId,
      mailboxId: spec.mailboxId,
      name: spec.name,
      prefix,
      hash: hashToken(plaintext),
      scopes,
      createdSource: spec.createdSource,
      parentTokenId: spec.parentTokenId,
      expiresAt: spec.expiresAt,
      cipher: this.cipher.encrypt(plaintext, id),
      revealUntil,
      createdAt: now,
      policy: spec.policy ?? null,
    });
    return {
      tokenId: id,
      tokenName: spec.name,
      tokenPrefix: prefix,
      scopes,
      createdSource: spec.createdSource,
      accessToken: plaintext,
      expiresAtTs: toTs(spec.expiresAt),
      createdAtTs: now.getTime(),
      policy: spec.policy ?? null,
    };
  }

  /** Expiry of a new child token: explicit (never past the caller's) or min(default TTL, caller's). */
  childExpiry(caller: Principal, expiresAtTs: number | null | undefined): Date {
    const now = this.clock.now().getTime();
    const ceiling = caller.expiresAt?.getTime() ?? Infinity;
    if (expiresAtTs === undefined || expiresAtTs === null)
      return new Date(Math.min(now + this.options.defaultTtlMs, ceiling));
    if (expiresAtTs <= now)
      throw new AppError('EXPIRY_INVALID', 'expiresAtTs must lie in the future (Unix milliseconds).');
    if (expiresAtTs > ceiling)
      throw new AppError('EXPIRY_INVALID', 'expiresAtTs must not be later than the expiry of the token creating it.');
    return new Date(expiresAtTs);
  }
}
