import { sql, type Database } from '../../storage/database.js';
import type { Row } from '../../storage/rows.js';
import { mailboxFullSql } from '../quota/storage-quota.store.js';

/** The enabled mailbox (of an enabled domain) whose primary address or active alias `address` is. */
const deliverableSql = (address: string) => sql<Row<'mailbox', 'id'> & { full: boolean }>`
    select m.id, ${mailboxFullSql} as full from mailbox m join domain d on d.id = m.domain_id
      where m.address = ${address} and m.disabled_at is null and d.disabled_at is null
    union all
    select m.id, ${mailboxFullSql} as full from mailbox_alias a join mailbox m on m.id = a.mailbox_id join domain d on d.id = m.domain_id
      where a.address = ${address} and a.is_active and m.disabled_at is null and d.disabled_at is null
    limit 1`;

/**
 * The enabled mailbox (of an enabled domain) whose primary address or active alias `address` is,
 * and whether it is already at its storage quota (the early refusal, in the same statement).
 * With `senderDomain`, also whether that domain is hosted here (enabled or not), the fact the MX
 * reads with RCPT TO for its hosted-sender check (ReceivingService).
 */
export async function deliverableMailbox(
  db: Database,
  address: string,
  senderDomain?: string,
): Promise<(Row<'mailbox', 'id'> & { full: boolean; sender_hosted?: boolean }) | undefined> {
  if (senderDomain === undefined) return db.one(deliverableSql(address));
  return db.one(sql<Row<'mailbox', 'id'> & { full: boolean; sender_hosted: boolean }>`
    select r.id, r.full, exists(select 1 from domain where name = ${senderDomain}) as sender_hosted
    from (${deliverableSql(address)}) r`);
}

/** The enabled hosted domain of that name, if any. */
export async function enabledDomain(db: Database, name: string): Promise<Row<'domain', 'id'> | undefined> {
  return db.one(sql<Row<'domain', 'id'>>`select id from domain where name = ${name} and disabled_at is null`);
}
