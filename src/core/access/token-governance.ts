import { AppError, notFound } from '../base/errors.js';
import { toTs, type Clock } from '../base/time.js';
import type { Logger } from '../base/logger.js';
import type { Principal } from './principal.js';
import { requireDomainToken, requireScope, resolveDomainMailboxById } from './access.js';
import type { Database, Sql } from '../../storage/database.js';
import type { TokenCipher } from './token-cipher.js';
import { MAILBOX_TOKEN_SCOPES, type TokenKind } from './scopes.js';
import type { CreateTokenInput } from './token.schemas.js';
import type { TokenAuthenticator } from './token-authenticator.js';
import type { TokenMinter } from './token-minter.js';
import { isRevealable, type TokenOwner, type TokenRow, type TokenStore } from './token.store.js';
import type { Governance, TokenCreatedView, TokenRecordView } from './token.views.js';
import { assertWithin, narrow, UNRESTRICTED, type PolicyLayer } from './effective-policy.js';

/**
 * Token governance: both the mailbox self-governance routes and the domain routes end in the same
 * `list/create/reveal/disable/remove`, so the subset and expiry rules exist once.
 */
export class TokenGovernance {
  constructor(
    private readonly db: Database,
    private readonly store: TokenStore,
    private readonly minter: TokenMinter,
    private readonly authenticator: TokenAuthenticator,
    private readonly cipher: TokenCipher,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Mailbox token + TokenManage: manages its own mailbox's tokens created at or after itself. */
  self(principal: Principal): Governance {
    if (principal.kind !== 'mailbox')
      throw new AppError(
        'TOKEN_KIND_FORBIDDEN',
        'Token self-governance needs a mailbox token; a domain token uses /api/domain/mailboxes/{mailboxId}/access-tokens.',
      );
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
    return (await this.store.listMailboxTokens(owner(g))).map((r) => this.view(r));
  }

  async create(g: Governance, input: CreateTokenInput): Promise<TokenCreatedView> {
    const granted = g.caller.scopes;
    const beyond = input.scopes.filter((s) => !granted.has(s) || !MAILBOX_TOKEN_SCOPES.includes(s));
    if (beyond.length > 0)
      throw new AppError(
        'SCOPE_NOT_GRANTABLE',
        `Cannot grant ${beyond.join(', ')}: a new mailbox token may only carry scopes its creator holds (DomainManage never).`,
      );
    const expiresAt = this.minter.childExpiry(g.caller, input.expiresAtTs);
    if (input.policy) assertWithin(input.policy, await this.chainPolicy(g.caller.tokenId));
    const domainId = g.caller.domainId;
    return this.db.tx((trx) =>
      this.minter.mint(trx, {
        kind: 'mailbox',
        domainId,
        mailboxId: g.mailboxId,
        name: input.tokenName,
        scopes: input.scopes,
        expiresAt,
        createdSource: g.onlyLaterThanCaller ? 'self' : 'domain',
        parentTokenId: g.caller.tokenId,
        policy: input.policy ?? null,
      }),
    );
  }

  async reveal(
    g: Governance,
    tokenId: string,
    remoteIp: string | null,
  ): Promise<{ tokenId: string; accessToken: string }> {
    const row = await this.find(g, tokenId);
    if (!isRevealable(row, this.clock.now())) throw new AppError('TOKEN_NOT_REVEALABLE');
    if (g.onlyLaterThanCaller) {
      assertScopesWithin(g.caller, row, 'Revealing');
      assertExpiryWithin(g.caller, row);
      await this.assertPolicyNoEscalation(g.caller.tokenId, row.id);
    }
    const accessToken = this.cipher.decrypt(row.plaintext_cipher!, row.id);
    this.log.info('token.revealed', {
      tokenId: row.id,
      mailboxId: row.mailbox_id,
      byTokenId: g.caller.tokenId,
      remoteIp,
    });
    return { tokenId: row.id, accessToken };
  }

  async disable(g: Governance, tokenId: string): Promise<TokenRecordView> {
    const target = await this.find(g, tokenId);
    if (g.onlyLaterThanCaller) assertScopesWithin(g.caller, target, 'Disabling');
    const row = await this.store.disable(tokenId, this.clock.now());
    this.authenticator.forgetCached(tokenId);
    this.log.info('token.disabled', { tokenId, byTokenId: g.caller.tokenId });
    return this.view(row);
  }

  async remove(g: Governance, tokenId: string): Promise<{ tokenId: string; deleted: true }> {
    const target = await this.find(g, tokenId);
    if (g.onlyLaterThanCaller) assertScopesWithin(g.caller, target, 'Deleting');
    await this.store.delete(tokenId);
    this.authenticator.forgetCached(tokenId);
    this.log.info('token.deleted', { tokenId, byTokenId: g.caller.tokenId });
    return { tokenId, deleted: true };
  }

  /** Erases ciphertext whose reveal window closed; reveal checks the window anyway. */
  sweepExpiredCiphertext(): Promise<number> {
    return this.store.eraseClosedCiphertext(this.clock.now());
  }

  /** Disables every token of a mailbox or domain (declared resource deleted). */
  async disableAll(trx: Sql, owner: { mailboxId: string } | { domainId: string; kind: TokenKind }): Promise<void> {
    await this.store.disableAll(trx, owner, this.clock.now());
    // Bulk disable (declared resource deleted): every cached principal may be affected.
    this.authenticator.forgetCached();
  }

  view(r: TokenRow): TokenRecordView {
    return {
      tokenId: r.id,
      tokenName: r.name,
      tokenPrefix: r.token_prefix,
      scopes: r.scopes,
      createdSource: r.created_source,
      expiresAtTs: toTs(r.expires_at),
      disabledAtTs: toTs(r.disabled_at),
      lastUsedAtTs: toTs(r.last_used_at),
      lastUsedRemoteIp: r.last_used_remote_ip,
      canRevealPlaintext: isRevealable(r, this.clock.now()),
      createdAtTs: toTs(r.created_at)!,
      policy: r.policy ?? null,
    };
  }

  /**
   * A caller under a token policy may reveal only its own descendants (whose chain contains it,
   * so they are at least as narrow); any other later token could be wider.
   */
  private async assertPolicyNoEscalation(callerId: string, tokenId: string): Promise<void> {
    const callerChain = await this.store.policyChain(callerId);
    if (callerChain.every((t) => t.policy === null)) return;
    const chain = await this.store.policyChain(tokenId);
    if (!chain.some((t) => t.id === callerId))
      throw new AppError('SCOPE_MISSING', 'Revealing this token would escape the policy of the calling token.');
  }

  /** The narrowing a token's chain imposes (without the mailbox's own policy, which may change). */
  async chainPolicy(tokenId: string) {
    const layers: PolicyLayer[] = (await this.store.policyChain(tokenId))
      .filter((t) => t.policy !== null)
      .map((t) => ({ source: `token ${t.id}`, policy: t.policy! }));
    return narrow(UNRESTRICTED, layers);
  }

  private async find(g: Governance, tokenId: string): Promise<TokenRow> {
    const row = await this.store.findMailboxToken(owner(g), tokenId);
    if (!row) throw notFound('Token');
    return row;
  }
}

const owner = (g: Governance): TokenOwner => ({
  mailboxId: g.mailboxId,
  notBeforeTokenId: g.onlyLaterThanCaller ? g.caller.tokenId : null,
});

/**
 * A mailbox token governs (reveals, disables, deletes) only tokens it could have created itself:
 * scopes within its own. Revealing a wider token would hand over what the caller lacks (for
 * example a later login token's scopes to a narrow TokenManage token); disabling or deleting one
 * would let a narrow token switch off the wider tokens of its mailbox, an approver's among them.
 */
function assertScopesWithin(caller: Principal, r: TokenRow, verb: 'Revealing' | 'Disabling' | 'Deleting'): void {
  const beyond = r.scopes.filter((s) => !caller.scopes.has(s));
  if (beyond.length > 0)
    throw new AppError(
      'SCOPE_MISSING',
      `${verb} this token needs ${beyond.join(', ')}, which the calling token lacks: a token governs only tokens within its own scopes.`,
    );
}

/** Revealing hands the token over: it may not outlive the caller either (the creation rule). */
function assertExpiryWithin(caller: Principal, r: TokenRow): void {
  const ceiling = caller.expiresAt?.getTime() ?? Infinity;
  const expiry = r.expires_at === null ? Infinity : new Date(r.expires_at).getTime();
  if (expiry > ceiling) throw new AppError('SCOPE_MISSING', 'Revealing this token would outlive the calling token.');
}
