import { AppError } from '../errors.js';
import { sql, num, type Sql } from '../../storage/database.js';

/**
 * The storage quota of a mailbox (docs/api.md, "Storage quota"). `storage_used_bytes` is what its
 * live messages occupy: each message's `stored_bytes` (raw message, bodies, attachments) is
 * charged in the transaction that inserts it and released when it is deleted. The effective
 * quota is the mailbox's own, else its domain's default, else none (unlimited).
 *
 * Every writer goes through `chargeStorage`: one conditional UPDATE of the mailbox row, so two
 * deliveries racing for the last bytes serialise on that row and the second finds no room; the
 * counter can never pass the quota.
 */

/** The effective quota of mailbox row `m` (null: unlimited), as SQL. */
const effectiveQuota = sql`coalesce(m.storage_quota_bytes,
  (select d.default_storage_quota_bytes from domain d where d.id = m.domain_id))`;

/**
 * Charges `bytes` to the mailbox inside the caller's transaction, or throws QUOTA_EXCEEDED
 * (nothing changed: the transaction stays usable). `exempt` counts without refusing (our bounces:
 * a sender must learn its mail failed even with a full mailbox). Takes the mailbox row lock, so callers keep
 * the lock order "mailbox row first".
 */
export async function chargeStorage(
  trx: Sql,
  mailboxId: string,
  bytes: number,
  options: { exempt?: boolean } = {},
): Promise<void> {
  const n = Math.max(0, Math.ceil(bytes));
  if (options.exempt) {
    await sql`update mailbox set storage_used_bytes = storage_used_bytes + ${n} where id = ${mailboxId}`.execute(trx);
    return;
  }
  const rows = (
    await sql<{ id: string }>`update mailbox m set storage_used_bytes = m.storage_used_bytes + ${n}
      where m.id = ${mailboxId} and (${effectiveQuota} is null or m.storage_used_bytes + ${n} <= ${effectiveQuota})
      returning m.id`.execute(trx)
  ).rows;
  if (rows.length === 0) throw new AppError('QUOTA_EXCEEDED');
}

/** Gives `bytes` back (a deleted message); never below 0. */
export async function releaseStorage(trx: Sql, mailboxId: string, bytes: number): Promise<void> {
  if (bytes <= 0) return;
  await sql`update mailbox set storage_used_bytes = greatest(storage_used_bytes - ${Math.ceil(bytes)}, 0)
    where id = ${mailboxId}`.execute(trx);
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
 * The cheap early refusal (SMTP RCPT TO / MAIL FROM): a mailbox already at its quota takes no
 * more mail (552 5.2.2). The commit's `chargeStorage` stays the authority.
 */
export async function assertNotFull(on: Sql, mailboxId: string): Promise<void> {
  const row = (
    await sql<{
      full: boolean;
    }>`select (${effectiveQuota} is not null and m.storage_used_bytes >= ${effectiveQuota}) as full
      from mailbox m where m.id = ${mailboxId}`.execute(on)
  ).rows[0];
  if (row?.full) throw new AppError('QUOTA_EXCEEDED');
}

/** Bytes a message's bodies take (UTF-8), which its stored_bytes counts besides raw and attachments. */
export const bodyBytes = (text: string | null | undefined, html: string | null | undefined): number =>
  (text ? Buffer.byteLength(text) : 0) + (html ? Buffer.byteLength(html) : 0);
