import { AppError, notFound } from '../../base/errors.js';
import { splitAddress } from '../../base/address.js';
import { toTs, type Clock } from '../../base/time.js';
import type { Principal } from '../../access/principal.js';
import { requireDomainToken, requireScope, resolveDomainMailboxById } from '../../access/access.js';
import { hashPassword } from '../../access/password.js';
import { DEFAULT_INTEGRATION_SCOPES } from '../../access/scopes.js';
import type { TokenMinter } from '../../access/token-minter.js';
import { type CursorCodec, type Page } from '../../base/paging/cursor.js';
import { z } from 'zod';
import type { Database } from '../../../storage/database.js';
import { enabledMailboxCount, insertMailbox, mailboxPage, setPasswordHash } from './mailbox.store.js';
import type { CreateMailboxInput, MailboxCreated, MailboxView } from './mailbox.schemas.js';

const mailboxCursor = z.object({ a: z.string() });

/** Mailbox administration by a domain token (DomainManage), for its own domain only. */
export class MailboxService {
  constructor(
    private readonly db: Database,
    private readonly minter: TokenMinter,
    private readonly cursors: CursorCodec,
    private readonly clock: Clock,
    private readonly options: { bootstrapTtlMs: number },
  ) {}

  /** POST /api/mailboxes and /api/domain/mailboxes: the mailbox plus its bootstrap token. */
  async create(principal: Principal, input: CreateMailboxInput): Promise<MailboxCreated> {
    this.requireDomainManage(principal);
    if (input.domainId !== undefined && input.domainId !== principal.domainId) {
      throw new AppError('DOMAIN_FORBIDDEN', 'domainId is not the domain of this token.');
    }
    const address = input.address ?? `${input.localPart!.toLowerCase()}@${principal.domainName}`;
    if (splitAddress(address).domain !== principal.domainName) {
      throw new AppError('DOMAIN_FORBIDDEN', `A token of ${principal.domainName} cannot create ${address}.`);
    }
    if (
      input.address !== undefined &&
      input.localPart !== undefined &&
      splitAddress(address).localPart !== input.localPart.toLowerCase()
    ) {
      throw new AppError('VALIDATION_FAILED', 'address and localPart disagree.');
    }
    const now = this.clock.now();
    const mailboxExpiresAt = input.ttlSeconds === undefined ? null : new Date(now.getTime() + input.ttlSeconds * 1000);
    // The bootstrap token ends with its parent, and with an ephemeral mailbox.
    const expiresAt = new Date(
      Math.min(
        now.getTime() + this.options.bootstrapTtlMs,
        principal.expiresAt?.getTime() ?? Infinity,
        mailboxExpiresAt?.getTime() ?? Infinity,
      ),
    );
    const displayName = input.displayName ?? '';
    return this.db.tx(async (trx) => {
      const mailboxId = await insertMailbox(
        trx,
        { domainId: principal.domainId, address, displayName, notes: input.notes ?? null, expiresAt: mailboxExpiresAt },
        now,
      );
      const token = await this.minter.mint(trx, {
        kind: 'mailbox',
        domainId: principal.domainId,
        mailboxId,
        name: 'bootstrap',
        scopes: DEFAULT_INTEGRATION_SCOPES,
        expiresAt,
        createdSource: 'bootstrap',
        parentTokenId: principal.tokenId,
      });
      const expiresAtTs = toTs(mailboxExpiresAt);
      return {
        mailbox: { mailboxId, address, displayName, expiresAtTs },
        initialAccessToken: token.accessToken,
        initialAccessTokenId: token.tokenId,
        initialAccessTokenExpiresAtTs: token.expiresAtTs,
        expiresAtTs,
      };
    });
  }

  /** GET /api/domain/mailboxes: keyset-paged by address. */
  async list(principal: Principal, query: { limit: number; cursor?: string | undefined }): Promise<Page<MailboxView>> {
    this.requireDomainManage(principal);
    const scope = `mailboxes:${principal.domainId}`;
    const after = query.cursor ? this.cursors.decode(scope, query.cursor, mailboxCursor).a : null;
    const rows = await mailboxPage(this.db, principal.domainId, after, query.limit + 1);
    const total = await enabledMailboxCount(this.db, principal.domainId);
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      items: page.map((r) => ({
        mailboxId: r.id,
        address: r.address,
        displayName: r.display_name,
        expiresAtTs: toTs(r.expires_at),
      })),
      nextCursor: rows.length > query.limit && last ? this.cursors.encode(scope, { a: last.address }) : null,
      totalCount: total,
    };
  }

  /** POST /api/domain/mailboxes/{mailboxId}/password. */
  async setPassword(
    principal: Principal,
    mailboxId: string,
    password: string,
  ): Promise<{ mailboxId: string; address: string; passwordSet: true }> {
    this.requireDomainManage(principal);
    const mailbox = await resolveDomainMailboxById(this.db, principal, mailboxId);
    const hash = await hashPassword(password);
    if (!(await setPasswordHash(this.db, mailbox.id, hash))) throw notFound('Mailbox');
    return { mailboxId: mailbox.id, address: mailbox.address, passwordSet: true };
  }

  private requireDomainManage(principal: Principal): void {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
  }
}
