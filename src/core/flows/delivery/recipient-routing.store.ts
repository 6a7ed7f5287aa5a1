import { sql, type Database } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';
import { mailboxFullSql, mailboxLimitedSql } from '../../state/quota/storage-quota.store.js';

/**
 * The enabled, unexpired mailbox (of an enabled domain) whose primary address or active alias `address` is,
 * whether it is already at its storage quota (the early refusal, in the same statement) and
 * whether it has one at all.
 */
export async function deliverableMailbox(
  db: Database,
  address: string,
  now: Date,
): Promise<(Row<'mailbox', 'id'> & { full: boolean; limited: boolean }) | undefined> {
  return db.one(sql<Row<'mailbox', 'id'> & { full: boolean; limited: boolean }>`
    select m.id, ${mailboxFullSql} as full, ${mailboxLimitedSql} as limited from mailbox m join domain d on d.id = m.domain_id
      where m.address = ${address} and m.disabled_at is null and d.disabled_at is null and ${unexpired(now)}
    union all
    select m.id, ${mailboxFullSql} as full, ${mailboxLimitedSql} as limited from mailbox_alias a join mailbox m on m.id = a.mailbox_id join domain d on d.id = m.domain_id
      where a.address = ${address} and a.is_active and m.disabled_at is null and d.disabled_at is null and ${unexpired(now)}
    limit 1`);
}

/** An ephemeral mailbox past its end receives nothing, as an unknown address (until the sweeper removes it). */
const unexpired = (now: Date) => sql`(m.expires_at is null or m.expires_at > ${now})`;

/** The enabled hosted domain of that name, if any. */
export async function enabledDomain(db: Database, name: string): Promise<Row<'domain', 'id'> | undefined> {
  return db.one(sql<Row<'domain', 'id'>>`select id from domain where name = ${name} and disabled_at is null`);
}
