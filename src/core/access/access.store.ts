import { sql, type Database } from '../../storage/database.js';
import type { Row } from '../../storage/rows.js';
import { sendRateLimitSql } from '../base/ratelimit/send-rate-limit.store.js';

/** The columns a MailboxRef is built from (the send rate limit the effective one: sendRateLimitSql). */
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
  return db.one(sql<MailboxRefRow>`select m.id, m.address, m.domain_id, m.display_name,
      ${sendRateLimitSql} as send_rate_limit_per_minute
    from mailbox m where m.address = ${address} and m.domain_id = ${domainId} and m.disabled_at is null`);
}

/** An enabled mailbox of the domain, by id. */
export async function enabledMailboxById(
  db: Database,
  domainId: string,
  mailboxId: string,
): Promise<MailboxRefRow | undefined> {
  return db.one(sql<MailboxRefRow>`select m.id, m.address, m.domain_id, m.display_name,
      ${sendRateLimitSql} as send_rate_limit_per_minute
    from mailbox m where m.id = ${mailboxId} and m.domain_id = ${domainId} and m.disabled_at is null`);
}
