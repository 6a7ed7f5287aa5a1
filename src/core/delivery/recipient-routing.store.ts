import { sql, type Database } from '../../storage/database.js';
import type { Row } from '../../storage/rows.js';
import { mailboxFullSql, mailboxLimitedSql } from '../quota/storage-quota.store.js';

/**
 * The enabled mailbox (of an enabled domain) whose primary address or active alias `address` is,
 * whether it is already at its storage quota (the early refusal, in the same statement) and
 * whether it has one at all.
 */
export async function deliverableMailbox(
  db: Database,
  address: string,
): Promise<(Row<'mailbox', 'id'> & { full: boolean; limited: boolean }) | undefined> {
  return db.one(sql<Row<'mailbox', 'id'> & { full: boolean; limited: boolean }>`
    select m.id, ${mailboxFullSql} as full, ${mailboxLimitedSql} as limited from mailbox m join domain d on d.id = m.domain_id
      where m.address = ${address} and m.disabled_at is null and d.disabled_at is null
    union all
    select m.id, ${mailboxFullSql} as full, ${mailboxLimitedSql} as limited from mailbox_alias a join mailbox m on m.id = a.mailbox_id join domain d on d.id = m.domain_id
      where a.address = ${address} and a.is_active and m.disabled_at is null and d.disabled_at is null
    limit 1`);
}

/** The enabled hosted domain of that name, if any. */
export async function enabledDomain(db: Database, name: string): Promise<Row<'domain', 'id'> | undefined> {
  return db.one(sql<Row<'domain', 'id'>>`select id from domain where name = ${name} and disabled_at is null`);
}
