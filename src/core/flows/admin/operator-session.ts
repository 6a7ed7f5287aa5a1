import { AppError } from '../../base/errors.js';
import type { Principal } from '../../access/principal.js';
import type { BaseServices } from '../../base/services.js';
import type { AccessServices } from '../../access/services.js';
import { DOMAIN_TOKEN_SCOPES } from '../../access/scopes.js';
import type { TokenCreatedView } from '../../access/token.views.js';
import { TokenStore } from '../../access/token.store.js';
import { findDomainByName, upsertDomain } from '../../state/domains/domain.store.js';

/**
 * The `mailbox` CLI's admin commands run as the operator, who already holds the database. They go
 * through the same services as the HTTP API (scopes, limits, validation, logs) by acting under a
 * short-lived domain token minted for the one command (named `cli`, createdSource `cli`, visible
 * in the domain's token list) and disabled when the command ends. See docs/api.md, "The mailbox
 * command".
 */
export class OperatorSession {
  private minted: string[] = [];

  constructor(private readonly services: BaseServices & AccessServices) {}

  /** Creates the domain (or finds it) and mints a domain token for integrations. */
  async createDomain(name: string, tokenName: string): Promise<{ domainId: string; token: TokenCreatedView }> {
    const { db, tokenMinter, clock, config } = this.services;
    return db.tx(async (trx) => {
      const domainId = (await findDomainByName(trx, name))?.id ?? (await upsertDomain(trx, { name }, clock.now()));
      const token = await tokenMinter.mint(trx, {
        kind: 'domain',
        domainId,
        mailboxId: null,
        name: tokenName,
        scopes: DOMAIN_TOKEN_SCOPES,
        expiresAt: new Date(clock.now().getTime() + config.TOKEN_DEFAULT_TTL),
        createdSource: 'cli',
        parentTokenId: null,
      });
      this.services.log.info('cli.domain_token_created', { domainId, tokenId: token.tokenId });
      return { domainId, token };
    });
  }

  /** A principal for the domain, exactly what a domain token with every scope would be. */
  async asDomain(domainName: string): Promise<Principal> {
    const { db, tokenMinter, tokenAuth, clock, config } = this.services;
    // Disabled when the command ends; its expiry only caps what it creates (a child token never
    // outlives its creator), so it is as long as the longest default a child gets.
    const ttlMs = Math.max(config.TOKEN_DEFAULT_TTL, config.BOOTSTRAP_TOKEN_TTL) + 86_400_000;
    const token = await db.tx(async (trx) => {
      const domain = await findDomainByName(trx, domainName);
      if (!domain)
        throw new AppError('VALIDATION_FAILED', `No domain ${domainName}; create it with: mailbox domain create`);
      return tokenMinter.mint(trx, {
        kind: 'domain',
        domainId: domain.id,
        mailboxId: null,
        name: 'cli',
        scopes: DOMAIN_TOKEN_SCOPES,
        expiresAt: new Date(clock.now().getTime() + ttlMs),
        createdSource: 'cli',
        parentTokenId: null,
      });
    });
    this.minted.push(token.tokenId);
    return tokenAuth.authenticate(token.accessToken, null);
  }

  /** Disables the session's own tokens (the ones it handed out to the operator stay). */
  async close(): Promise<void> {
    const now = this.services.clock.now();
    const store = new TokenStore(this.services.db);
    for (const id of this.minted.splice(0)) {
      await store.disable(id, now);
      this.services.tokenAuth.forgetCached(id);
    }
  }
}
