import type { Principal } from '../../access/principal.js';
import { requireDomainToken, requireScope, resolveDomainMailboxById, resolveMailbox } from '../../access/access.js';
import type { Database } from '../../../storage/database.js';
import { mailboxPolicySchema, type MailboxPolicyInput, type MailboxPolicyView } from '../../access/policy.schemas.js';
import type { PolicyStore } from './policy.store.js';
import { AppError } from '../../base/errors.js';

/**
 * Reading and setting a mailbox's outbound policy (docs/contract.md: `GET`/`PUT
 * /api/domain/mailboxes/{mailboxId}/policy` with DomainManage, `GET /api/mailbox/policy` with
 * MailboxRead). A declared Mailbox's `spec.policy` is written by the reconciler through the same
 * store, and wins again at its next reconcile (the manifest is the source of truth there).
 */
export class MailboxPolicyService {
  constructor(
    private readonly db: Database,
    private readonly store: PolicyStore,
  ) {}

  async forMailbox(principal: Principal, mailboxAddress?: string): Promise<MailboxPolicyView> {
    requireScope(principal, 'MailboxRead');
    const mailbox = await resolveMailbox(this.db, principal, mailboxAddress);
    return { mailboxId: mailbox.id, mailboxAddress: mailbox.address, ...(await this.store.mailboxPolicy(mailbox.id)) };
  }

  async forDomainMailbox(principal: Principal, mailboxId: string): Promise<MailboxPolicyView> {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    const mailbox = await resolveDomainMailboxById(this.db, principal, mailboxId);
    return { mailboxId: mailbox.id, mailboxAddress: mailbox.address, ...(await this.store.mailboxPolicy(mailbox.id)) };
  }

  /**
   * Replaces the whole policy (omitted fields take their defaults); binds every token at its next
   * use. An approver may not be an address of the mailbox itself: its agent would read the link.
   */
  async set(principal: Principal, mailboxId: string, input: MailboxPolicyInput): Promise<MailboxPolicyView> {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    const mailbox = await resolveDomainMailboxById(this.db, principal, mailboxId);
    const parsed = mailboxPolicySchema.parse(input);
    const policy = { ...parsed, approverAddresses: [...new Set(parsed.approverAddresses)] };
    const own = await this.store.ownAddressesAmong(mailbox.id, policy.approverAddresses);
    if (own.length > 0)
      throw new AppError(
        'VALIDATION_FAILED',
        `approverAddresses: ${own[0]} is an address of this mailbox; an approver must be a person its agent cannot read for.`,
      );
    await this.db.tx((trx) => this.store.setMailboxPolicy(trx, mailbox.id, policy));
    return { mailboxId: mailbox.id, mailboxAddress: mailbox.address, ...policy };
  }
}
