import { AppError } from '../../base/errors.js';
import { hotRow, sql, num, type Sql, type SqlFragment } from '../../../storage/database.js';
import { isNotNullViolation } from '../../../storage/errors.js';

/**
 * The storage quota of a mailbox (docs/api.md, "Storage quota"). `storage_used_bytes` is what its
 * live messages occupy: each message's `stored_bytes` (raw message, bodies, attachments) is
 * charged in the transaction that inserts it and released when it is deleted. The effective
 * quota is the mailbox's own, else its domain's default, else none (unlimited).
 *
 * Every writer goes through `chargeStorage` (a queue row's reservation through `insertReserving`):
 * one conditional UPDATE of the mailbox row, so two deliveries racing for the last bytes serialise
 * on that row and the second finds no room; the counter can never pass the quota.
 */

/** The effective quota of mailbox row `m` (null: unlimited), as SQL. */
const effectiveQuota = sql`coalesce(m.storage_quota_bytes,
  (select d.default_storage_quota_bytes from domain d where d.id = m.domain_id))`;

/** Mailbox row `m` has room for `n` more bytes under its effective quota, as SQL. */
const hasRoomFor = (n: number) => sql`(${effectiveQuota} is null or m.storage_used_bytes + ${n} <= ${effectiveQuota})`;

/**
 * Charges `bytes` to the mailbox inside the caller's transaction, or throws QUOTA_EXCEEDED
 * (nothing changed: the transaction stays usable). `exempt` counts without refusing (our bounces:
 * a sender must learn its mail failed even with a full mailbox). `countAs` raises that
 * direction's message counter (the lists' totalCount) in the same update: a new message lands on
 * its mailbox row in one statement (bench/smtp counts round trips). Takes the mailbox row lock,
 * so callers keep the lock order "mailbox row first".
 */
export async function chargeStorage(
  trx: Sql,
  mailboxId: string,
  bytes: number,
  options: { exempt?: boolean; countAs?: 'inbound' | 'outbound' } = {},
): Promise<void> {
  const n = Math.max(0, Math.ceil(bytes));
  const counter =
    options.countAs === 'inbound'
      ? sql`, inbound_count = m.inbound_count + 1`
      : options.countAs === 'outbound'
        ? sql`, outbound_count = m.outbound_count + 1`
        : sql``;
  const room = options.exempt ? sql`` : sql`and ${hasRoomFor(n)}`;
  const charged = await hotRow(sql`update mailbox m set storage_used_bytes = m.storage_used_bytes + ${n}${counter}
      where m.id = ${mailboxId} ${room}`).execute(trx);
  if (Number(charged.numAffectedRows ?? 0) > 0) return;
  const exists = (await sql`select 1 from mailbox where id = ${mailboxId}`.execute(trx)).rows.length > 0;
  if (!exists) throw new Error(`mailbox ${mailboxId} does not exist`);
  throw new AppError('QUOTA_EXCEEDED');
}

/**
 * Replaces a reservation made at intake (queued intake, docs/api.md) by what the message really
 * occupies, and counts the message, in one statement. A message smaller than its reservation
 * (the usual case) gives the rest back and is never refused; one larger charges the excess like
 * any delivery, so the counter still never passes the quota (QUOTA_EXCEEDED).
 */
export async function settleReservation(
  trx: Sql,
  mailboxId: string,
  reservedBytes: number,
  storedBytes: number,
  countAs: 'inbound' | 'outbound' = 'inbound',
): Promise<void> {
  const delta = Math.ceil(storedBytes) - Math.ceil(reservedBytes);
  if (delta > 0) return chargeStorage(trx, mailboxId, delta, { countAs });
  const counter =
    countAs === 'inbound' ? sql`inbound_count = inbound_count + 1` : sql`outbound_count = outbound_count + 1`;
  await hotRow(sql`update mailbox set storage_used_bytes = greatest(storage_used_bytes + ${delta}, 0), ${counter}
    where id = ${mailboxId}`).execute(trx);
}

/**
 * Quota reserved per mailbox for a queued message (port 25's per recipient, port 587's in the sender's) of `rawBytes`: the raw message with
 * room for our trace fields, plus its bodies and attachments decoded (at most about its size
 * again for ordinary mail). The delivery settles it against the real size (settleReservation).
 */
export const reservationFor = (rawBytes: number): number => 2 * rawBytes + 8 * 1024;

/**
 * Runs `insert` (a queue row's INSERT, queued intake) as one statement with its quota reservation:
 * it locks `mailboxIds` in id order and charges `bytes` to each one with room, and `insert` puts
 * `reservedBytes` in the row's not-null `reserved_bytes`: null unless every mailbox was charged,
 * so a reservation that does not fit fails the whole statement (nothing charged, no row) and is
 * QUOTA_EXCEEDED. One statement that fails on its own, so it may commit in the batch that carries
 * it (Database.writeTx's `commitWithStatements`). With no mailbox to reserve in it is plain `bytes`.
 */
export async function insertReserving(
  trx: Sql,
  mailboxIds: readonly string[],
  bytes: number,
  insert: (reservedBytes: SqlFragment) => SqlFragment,
): Promise<void> {
  if (mailboxIds.length === 0) {
    await insert(sql`${bytes}::bigint`).execute(trx);
    return;
  }
  const ids = [...new Set(mailboxIds)].sort();
  const n = Math.max(0, Math.ceil(bytes));
  try {
    await sql`with locked as (select id from mailbox where id = any(${ids}::text[]) order by id for no key update),
      reserved as (update mailbox m set storage_used_bytes = m.storage_used_bytes + ${n}
        from locked where m.id = locked.id and ${hasRoomFor(n)} returning m.id)
      ${insert(sql`(select case when count(*) = ${ids.length} then ${n}::bigint end from reserved)`)}`.execute(trx);
  } catch (err) {
    if (isNotNullViolation(err, 'reserved_bytes')) throw new AppError('QUOTA_EXCEEDED');
    throw err;
  }
}

/** Gives `bytes` back (a deleted message); never below 0. */
export async function releaseStorage(trx: Sql, mailboxId: string, bytes: number): Promise<void> {
  if (bytes <= 0) return;
  await hotRow(sql`update mailbox set storage_used_bytes = greatest(storage_used_bytes - ${Math.ceil(bytes)}, 0)
    where id = ${mailboxId}`).execute(trx);
}

export interface StorageUsage {
  usedBytes: number;
  /** The effective quota; null: unlimited. */
  quotaBytes: number | null;
  /** The mailbox's own quota; null: the domain default applies. */
  mailboxQuotaBytes: number | null;
  /** The domain's default for mailboxes without their own. */
  domainDefaultQuotaBytes: number | null;
  /** Uploads no send claimed yet (they are charged when a send claims them). */
  pendingUploads: number;
  pendingUploadBytes: number;
}

export async function storageUsage(on: Sql, mailboxId: string): Promise<StorageUsage | undefined> {
  const row = (
    await sql<{
      used: unknown;
      mailbox_quota: unknown;
      domain_default: unknown;
      pending: unknown;
      pending_bytes: unknown;
    }>`select m.storage_used_bytes as used, m.storage_quota_bytes as mailbox_quota,
        d.default_storage_quota_bytes as domain_default,
        (select count(*) from attachment a where a.mailbox_id = m.id and a.message_id is null) as pending,
        (select coalesce(sum(a.size_bytes), 0) from attachment a where a.mailbox_id = m.id and a.message_id is null) as pending_bytes
      from mailbox m join domain d on d.id = m.domain_id where m.id = ${mailboxId}`.execute(on)
  ).rows[0];
  if (!row) return undefined;
  const mailboxQuotaBytes = row.mailbox_quota === null ? null : num(row.mailbox_quota);
  const domainDefaultQuotaBytes = row.domain_default === null ? null : num(row.domain_default);
  return {
    usedBytes: num(row.used),
    quotaBytes: mailboxQuotaBytes ?? domainDefaultQuotaBytes,
    mailboxQuotaBytes,
    domainDefaultQuotaBytes,
    pendingUploads: num(row.pending),
    pendingUploadBytes: num(row.pending_bytes),
  };
}

/**
 * Whether mailbox row `m` is already at its quota, as SQL: the cheap early refusal (SMTP RCPT TO
 * on 25, MAIL FROM on 587: 552 5.2.2), read with the row those steps read anyway. The commit's
 * `chargeStorage` stays the authority.
 */
export const mailboxFullSql = sql<boolean>`(${effectiveQuota} is not null and m.storage_used_bytes >= ${effectiveQuota})`;

/** Whether mailbox row `m` has a storage quota at all (queued intake reserves only where one applies). */
export const mailboxLimitedSql = sql<boolean>`(${effectiveQuota} is not null)`;

/** Bytes a message's bodies take (UTF-8), which its stored_bytes counts besides raw and attachments. */
export const bodyBytes = (text: string | null | undefined, html: string | null | undefined): number =>
  (text ? Buffer.byteLength(text) : 0) + (html ? Buffer.byteLength(html) : 0);

/** Sets a mailbox's own storage quota (null: the domain's default applies). */
export async function setMailboxQuota(trx: Sql, mailboxId: string, quota: number | null): Promise<void> {
  await sql`update mailbox set storage_quota_bytes = ${quota} where id = ${mailboxId}`.execute(trx);
}

/** Sets a domain's default mailbox quota. */
export async function setDomainDefaultQuota(trx: Sql, domainId: string, quota: number | null): Promise<void> {
  await sql`update domain set default_storage_quota_bytes = ${quota} where id = ${domainId}`.execute(trx);
}

/** A declared mailbox quota (resources); true when it changed. */
export async function declareMailboxQuota(trx: Sql, mailboxId: string, quota: number | null): Promise<boolean> {
  const r = await sql`update mailbox set storage_quota_bytes = ${quota}
      where id = ${mailboxId} and storage_quota_bytes is distinct from ${quota}::bigint`.execute(trx);
  return Number(r.numAffectedRows ?? 0) > 0;
}

/** A declared domain default quota (resources); true when it changed. */
export async function declareDomainDefaultQuota(trx: Sql, domainId: string, quota: number | null): Promise<boolean> {
  const r = await sql`update domain set default_storage_quota_bytes = ${quota}
    where id = ${domainId} and default_storage_quota_bytes is distinct from ${quota}::bigint`.execute(trx);
  return Number(r.numAffectedRows ?? 0) > 0;
}

/** A domain's default quota and the storage its mailboxes use. */
export async function domainStorageRow(
  db: Sql,
  domainId: string,
): Promise<{ id: string; name: string; quota: unknown; used: unknown } | undefined> {
  return (
    await sql<{ id: string; name: string; quota: unknown; used: unknown }>`
      select d.id, d.name, d.default_storage_quota_bytes as quota,
        (select coalesce(sum(m.storage_used_bytes), 0) from mailbox m where m.domain_id = d.id) as used
      from domain d where d.id = ${domainId}`.execute(db)
  ).rows[0];
}
