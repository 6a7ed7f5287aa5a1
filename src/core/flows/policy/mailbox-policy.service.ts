import type { Principal } from '../../access/principal.js';
import { requireDomainToken, requireScope, resolveDomainMailboxById, resolveMailbox } from '../../access/access.js';
import type { Database } from '../../../storage/database.js';
import { mailboxPolicySchema, type MailboxPolicyInput, type MailboxPolicyView } from '../../access/policy.schemas.js';
import type { PolicyStore } from './policy.store.js';

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

  /** Replaces the whole policy (omitted fields take their defaults); binds every token at its next use. */
  async set(principal: Principal, mailboxId: string, input: MailboxPolicyInput): Promise<MailboxPolicyView> {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    const mailbox = await resolveDomainMailboxById(this.db, principal, mailboxId);
    const policy = mailboxPolicySchema.parse(input);
    await this.db.tx((trx) => this.store.setMailboxPolicy(trx, mailbox.id, policy));
    return { mailboxId: mailbox.id, mailboxAddress: mailbox.address, ...policy };
  }
}
