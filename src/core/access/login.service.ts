import { AppError } from '../base/errors.js';
import { normalizeAddress, isAddress } from '../base/address.js';
import type { Clock } from '../base/time.js';
import { verifyAgainstDummy, verifyPassword } from './password.js';
import { DEFAULT_INTEGRATION_SCOPES } from './scopes.js';
import type { TokenMinter } from './token-minter.js';
import { clientKey, isCredentialFailure, type AuthThrottle } from './auth-throttle.js';
import type { PasswordHashGate } from './password-hash-gate.js';
import type { TokenCipher } from './token-cipher.js';
import { loginMailbox, reusableMailboxToken } from './login.store.js';
import type { RateLimits } from '../base/ratelimit/rate-limits.js';
import type { LoginResult } from './login.schemas.js';
import type { Logger } from '../base/logger.js';
import { ms, type Database } from '../../storage/database.js';

/**
 * Password login (spec, Password login): reuse a revealable token that login or bootstrap created
 * with exactly the default integration scopes, else mint one (docs/trust.md, "Password login"). Wrong password and unknown mailbox are the same 401.
 * Throttling (docs/api.md, "Authentication throttling"):
 * - per (mailbox address, client address): LOGIN_FAILURES_PER_15M failures, then 429 without a hash;
 * - per mailbox address: past LOGIN_FAILURES_PER_15M failures from all addresses together, every
 *   check waits LOGIN_ACCOUNT_SLOWDOWN first: slower guessing, but the right password from
 *   another address is never refused;
 * - a wrong password also costs the client address a point of the shared credential budget
 *   (AUTH_FAILURES_PER_15M; 429 past it), and every hash runs through the PasswordHashGate.
 */
export class LoginService {
  constructor(
    private readonly db: Database,
    private readonly throttle: AuthThrottle,
    private readonly minter: TokenMinter,
    private readonly cipher: TokenCipher,
    private readonly limits: RateLimits,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly hashes: PasswordHashGate,
    private readonly options: {
      defaultTtlMs: number;
      accountFailuresBeforeSlowdown: number;
      accountSlowdownMs: number;
    },
  ) {}

  async login(input: { mailboxAddress: string; password: string }, remoteIp: string | null): Promise<LoginResult> {
    const address = normalizeAddress(input.mailboxAddress);
    if (!isAddress(address)) throw new AppError('MAILBOX_ADDRESS_INVALID');
    const ipKey = remoteIp ? clientKey(remoteIp) : '';
    await this.limits.assertLoginAllowed(address, ipKey);
    if ((await this.limits.accountLoginFailures(address)) >= this.options.accountFailuresBeforeSlowdown)
      await new Promise((r) => setTimeout(r, this.options.accountSlowdownMs));
    const mailbox = await this.checkPassword(address, input.password, remoteIp).catch(async (err: unknown) => {
      if (!isCredentialFailure(err) || !remoteIp) throw err;
      return this.throttle.refuse(remoteIp, err);
    });
    const now = this.clock.now();
    const reusable = await reusableMailboxToken(this.db, mailbox.id, DEFAULT_INTEGRATION_SCOPES, now);
    if (reusable) {
      this.log.info('login.reused', { mailboxId: mailbox.id, tokenId: reusable.id, remoteIp });
      return {
        accessToken: this.cipher.decrypt(reusable.plaintext_cipher, reusable.id),
        tokenId: reusable.id,
        tokenPrefix: reusable.token_prefix,
        scopes: reusable.scopes,
        expiresAtTs: ms(reusable.expires_at),
        mailboxId: mailbox.id,
        mailboxAddress: mailbox.address,
        reused: true,
      };
    }
    const created = await this.db.tx((trx) =>
      this.minter.mint(trx, {
        kind: 'mailbox',
        domainId: mailbox.domain_id,
        mailboxId: mailbox.id,
        name: 'password-login',
        scopes: DEFAULT_INTEGRATION_SCOPES,
        expiresAt: new Date(now.getTime() + this.options.defaultTtlMs),
        createdSource: 'login',
        parentTokenId: null,
      }),
    );
    this.log.info('login.minted', { mailboxId: mailbox.id, tokenId: created.tokenId, remoteIp });
    return {
      accessToken: created.accessToken,
      tokenId: created.tokenId,
      tokenPrefix: created.tokenPrefix,
      scopes: created.scopes,
      expiresAtTs: created.expiresAtTs,
      mailboxId: mailbox.id,
      mailboxAddress: mailbox.address,
      reused: false,
    };
  }

  /** The mailbox when the password is right; LOGIN_FAILED (counted per mailbox address) otherwise. */
  private async checkPassword(
    address: string,
    password: string,
    remoteIp: string | null,
  ): Promise<{ id: string; domain_id: string; address: string }> {
    const mailbox = await loginMailbox(this.db, address);
    const ok = await this.hashes.run(remoteIp, () =>
      mailbox?.password_hash ? verifyPassword(password, mailbox.password_hash) : verifyAgainstDummy(password),
    );
    if (!mailbox || !ok) {
      await this.limits.recordLoginFailure(address, remoteIp ? clientKey(remoteIp) : '');
      this.log.info('login.failed', { mailboxAddress: address, remoteIp });
      throw new AppError('LOGIN_FAILED');
    }
    return mailbox;
  }
}
