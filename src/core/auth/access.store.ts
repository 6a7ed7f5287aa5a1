import { sql, type Database } from '../../storage/database.js';
import type { Row } from '../../storage/rows.js';

/** The columns a MailboxRef is built from. */
export type MailboxRefRow = Row<
  'mailbox',
  'id' | 'address' | 'domain_id' | 'display_name' | 'send_rate_limit_per_minute'
>;

/** An enabled mailbox of the domain, by address. */
export async function enabledMailboxByAddress(
  db: Database,
  domainId: string,
  address: string,
): Promise<MailboxRefRow | undefined> {
  return db.one(sql<MailboxRefRow>`select id, address, domain_id, display_name, send_rate_limit_per_minute
    from mailbox where address = ${address} and domain_id = ${domainId} and disabled_at is null`);
}

/** An enabled mailbox of the domain, by id. */
export async function enabledMailboxById(
  db: Database,
  domainId: string,
  mailboxId: string,
): Promise<MailboxRefRow | undefined> {
  return db.one(sql<MailboxRefRow>`select id, address, domain_id, display_name, send_rate_limit_per_minute
    from mailbox where id = ${mailboxId} and domain_id = ${domainId} and disabled_at is null`);
}
