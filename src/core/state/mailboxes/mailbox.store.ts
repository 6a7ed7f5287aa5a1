import { AppError } from '../../base/errors.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import { splitAddress } from '../../base/address.js';
import { sql, num, type Database, type Sql } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';
import { isUniqueViolation } from '../../../storage/errors.js';

export interface NewMailbox {
  domainId: string;
  address: string;
  displayName: string;
  notes?: string | null;
  resourceKey?: string | null;
  sendRateLimitPerMinute?: number | null;
  /** An ephemeral mailbox's end; null or absent: it does not expire. */
  expiresAt?: Date | null;
}

/** True when the address is taken by a mailbox or by an alias (one namespace for both). */
export async function addressTaken(trx: Sql, address: string): Promise<boolean> {
  const row = (
    await sql<{ taken: boolean }>`select exists(select 1 from mailbox where address = ${address})
    or exists(select 1 from mailbox_alias where address = ${address}) as taken`.execute(trx)
  ).rows[0];
  return row?.taken === true;
}

/** Inserts a mailbox and its primary sender identity; an existing address is a 409. */
export async function insertMailbox(trx: Sql, m: NewMailbox, now = new Date()): Promise<string> {
  if (await addressTaken(trx, m.address)) throw new AppError('MAILBOX_EXISTS');
  const id = newId(ID_PREFIX.mailbox);
  try {
    await sql`insert into mailbox (id, domain_id, address, local_part, display_name, notes, resource_key, send_rate_limit_per_minute, created_at, expires_at)
      values (${id}, ${m.domainId}, ${m.address}, ${splitAddress(m.address).localPart}, ${m.displayName}, ${m.notes ?? null},
        ${m.resourceKey ?? null}, ${m.sendRateLimitPerMinute ?? null}, ${now}, ${m.expiresAt ?? null})`.execute(trx);
  } catch (err) {
    if (isUniqueViolation(err, 'mailbox_address_unique')) throw new AppError('MAILBOX_EXISTS');
    throw err;
  }
  await sql`insert into sender_identity (id, mailbox_id, address, display_name, is_active, created_at)
    values (${newId(ID_PREFIX.identity)}, ${id}, ${m.address}, ${m.displayName}, true, ${now})`.execute(trx);
  return id;
}

/** One keyset page of a domain's enabled mailboxes by address (`limit` rows after `after`). */
export async function mailboxPage(
  db: Database,
  domainId: string,
  after: string | null,
  limit: number,
): Promise<Row<'mailbox', 'id' | 'address' | 'display_name' | 'expires_at'>[]> {
  return db.rows(sql<
    Row<'mailbox', 'id' | 'address' | 'display_name' | 'expires_at'>
  >`select id, address, display_name, expires_at
      from mailbox where domain_id = ${domainId} and disabled_at is null
      ${after === null ? sql`` : sql`and address > ${after}`} order by address limit ${limit}`);
}

/** How many enabled mailboxes a domain has. */
export async function enabledMailboxCount(db: Database, domainId: string): Promise<number> {
  const row = await db.one(
    sql<{
      n: string;
    }>`select count(*) as n from mailbox where domain_id = ${domainId} and disabled_at is null`,
  );
  return num(row?.n);
}

/** Sets a mailbox's password hash; false when there is no such mailbox. */
export async function setPasswordHash(db: Database, mailboxId: string, hash: string): Promise<boolean> {
  const row = await db.one(
    sql<Row<'mailbox', 'id'>>`update mailbox set password_hash = ${hash} where id = ${mailboxId} returning id`,
  );
  return row !== undefined;
}

/**
 * Row-locks the mailboxes, in id order (two writers locking the same pair never deadlock), until
 * the transaction ends: writers of one mailbox (draft and thread-state writes, uploads, local
 * delivery, a send claiming uploads) take it before anything else. FOR NO KEY UPDATE, the mode of
 * the counter updates, never FOR UPDATE: those updates go last in their batch (database.ts
 * `hotRow`), so other transactions' inserts may already hold KEY SHARE on the row (their
 * foreign-key checks), and a send that locks it again after its own charge must not wait for them
 * while they wait for it.
 */
export async function lockMailboxRows(trx: Sql, mailboxIds: readonly string[]): Promise<void> {
  await sql`select id from mailbox where id = any(${[...mailboxIds]}::text[]) order by id for no key update`.execute(
    trx,
  );
}
