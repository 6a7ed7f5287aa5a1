import type { Principal, MailboxRef } from '../../access/principal.js';
import { requireDomainToken, requireScope, resolveDomainMailboxById, resolveMailbox } from '../../access/access.js';
import { num, type Database } from '../../../storage/database.js';
import { domainStorageRow, setDomainDefaultQuota, setMailboxQuota, storageUsage } from './storage-quota.store.js';
import type {
  DomainStorage,
  MailboxStorage,
  SetDomainStorageInput,
  SetMailboxStorageInput,
} from './storage.schemas.js';

/**
 * Reading and setting storage quotas (docs/api.md, "Storage quota"): `GET /api/mailbox/storage`
 * (MailboxRead), `GET|PUT /api/domain/mailboxes/{id}/storage` and `GET|PUT /api/domain/storage`
 * (DomainManage). A declared Mailbox's `spec.storageQuotaBytes` (and a Domain's
 * `spec.defaultStorageQuotaBytes`) is written by the reconciler and wins again at its next
 * reconcile. Lowering a quota below what is used refuses new mail; nothing stored is removed.
 */
export class StorageService {
  constructor(private readonly db: Database) {}

  async forMailbox(principal: Principal, mailboxAddress?: string): Promise<MailboxStorage> {
    requireScope(principal, 'MailboxRead');
    return this.view(await resolveMailbox(this.db, principal, mailboxAddress));
  }

  async forDomainMailbox(principal: Principal, mailboxId: string): Promise<MailboxStorage> {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    return this.view(await resolveDomainMailboxById(this.db, principal, mailboxId));
  }

  async setMailbox(principal: Principal, mailboxId: string, input: SetMailboxStorageInput): Promise<MailboxStorage> {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    const mailbox = await resolveDomainMailboxById(this.db, principal, mailboxId);
    await setMailboxQuota(this.db.db, mailbox.id, input.storageQuotaBytes);
    return this.view(mailbox);
  }

  async forDomain(principal: Principal): Promise<DomainStorage> {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    return this.domainView(principal.domainId);
  }

  async setDomain(principal: Principal, input: SetDomainStorageInput): Promise<DomainStorage> {
    requireDomainToken(principal);
    requireScope(principal, 'DomainManage');
    await setDomainDefaultQuota(this.db.db, principal.domainId, input.defaultStorageQuotaBytes);
    return this.domainView(principal.domainId);
  }

  private async view(mailbox: MailboxRef): Promise<MailboxStorage> {
    const usage = await storageUsage(this.db.db, mailbox.id);
    if (!usage) throw new Error(`mailbox ${mailbox.id} vanished`);
    return { mailboxId: mailbox.id, mailboxAddress: mailbox.address, ...usage };
  }

  private async domainView(domainId: string): Promise<DomainStorage> {
    const row = await domainStorageRow(this.db.db, domainId);
    if (!row) throw new Error(`domain ${domainId} vanished`);
    return {
      domainId: row.id,
      domain: row.name,
      defaultStorageQuotaBytes: row.quota === null ? null : num(row.quota),
      usedBytes: num(row.used),
    };
  }
}
