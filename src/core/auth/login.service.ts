import { AppError } from '../errors.js';
import { normalizeAddress, isAddress } from '../address.js';
import type { Clock } from '../time.js';
import { verifyAgainstDummy, verifyPassword } from './password.js';
import { DEFAULT_INTEGRATION_SCOPES } from '../tokens/scopes.js';
import type { TokenService } from '../tokens/token.service.js';
import type { TokenCipher } from '../tokens/token-cipher.js';
import type { RateLimits } from '../ratelimit/rate-limits.js';
import type { LoginResult } from '../mailboxes/mailbox.schemas.js';
import type { Logger } from '../logger.js';
import { sql, ms, type Database } from '../../storage/database.js';

/**
 * Password login (spec, Password login): reuse a revealable token that covers the default
 * integration scopes, else mint one. Wrong password and unknown mailbox are the same 401, and
 * failures are throttled per mailbox address (LOGIN_FAILURES_PER_15M) and per client address (the
 * credential-failure budget every channel shares, AUTH_FAILURES_PER_15M).
 */
export class LoginService {
  constructor(
    private readonly db: Database,
    private readonly tokens: TokenService,
    private readonly cipher: TokenCipher,
    private readonly limits: RateLimits,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: { defaultTtlMs: number },
  ) {}

  async login(input: { mailboxAddress: string; password: string }, remoteIp: string | null): Promise<LoginResult> {
    const address = normalizeAddress(input.mailboxAddress);
    if (!isAddress(address)) throw new AppError('MAILBOX_ADDRESS_INVALID');
    const throttle = this.tokens.throttle;
    if (remoteIp) await throttle.assertAllowed(remoteIp);
    await this.limits.assertLoginAllowed(address);
    const check = () => this.checkPassword(address, input.password, remoteIp);
    const mailbox = remoteIp ? await throttle.attempt(remoteIp, check) : await check();
    const now = this.clock.now();
    const reusable = await this.db.one(sql<{ id: string; token_prefix: string; scopes: string[]; expires_at: string | null; plaintext_cipher: string }>`
      select id, token_prefix, scopes, expires_at, plaintext_cipher from access_token
      where mailbox_id = ${mailbox.id} and kind = 'mailbox' and disabled_at is null and plaintext_cipher is not null
        and reveal_until > ${now} and (expires_at is null or expires_at > ${now}) and scopes @> ${[...DEFAULT_INTEGRATION_SCOPES]}::text[]
      order by created_at desc limit 1`);
    if (reusable) {
      this.log.info('login.reused', { mailboxId: mailbox.id, tokenId: reusable.id, remoteIp });
      return {
        accessToken: this.cipher.decrypt(reusable.plaintext_cipher, reusable.id), tokenId: reusable.id, tokenPrefix: reusable.token_prefix,
        scopes: reusable.scopes, expiresAtTs: ms(reusable.expires_at), mailboxId: mailbox.id, mailboxAddress: mailbox.address, reused: true,
      };
    }
    const created = await this.db.tx((trx) => this.tokens.mint(trx, {
      kind: 'mailbox', domainId: mailbox.domain_id, mailboxId: mailbox.id, name: 'password-login', scopes: DEFAULT_INTEGRATION_SCOPES,
      expiresAt: new Date(now.getTime() + this.options.defaultTtlMs), createdSource: 'login', parentTokenId: null,
    }));
    this.log.info('login.minted', { mailboxId: mailbox.id, tokenId: created.tokenId, remoteIp });
    return {
      accessToken: created.accessToken, tokenId: created.tokenId, tokenPrefix: created.tokenPrefix, scopes: created.scopes,
      expiresAtTs: created.expiresAtTs, mailboxId: mailbox.id, mailboxAddress: mailbox.address, reused: false,
    };
  }

  /** The mailbox when the password is right; LOGIN_FAILED (counted per mailbox address) otherwise. */
  private async checkPassword(address: string, password: string, remoteIp: string | null): Promise<{ id: string; domain_id: string; address: string }> {
    const mailbox = await this.db.one(sql<{ id: string; domain_id: string; address: string; password_hash: string | null }>`
      select m.id, m.domain_id, m.address, m.password_hash from mailbox m join domain d on d.id = m.domain_id
      where m.address = ${address} and m.disabled_at is null and d.disabled_at is null`);
    const ok = mailbox?.password_hash ? await verifyPassword(password, mailbox.password_hash) : await verifyAgainstDummy(password);
    if (!mailbox || !ok) {
      await this.limits.recordLoginFailure(address);
      this.log.info('login.failed', { mailboxAddress: address, remoteIp });
      throw new AppError('LOGIN_FAILED');
    }
    return mailbox;
  }
}
