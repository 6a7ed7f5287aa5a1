import { sql, type Sql } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import type { TokenKind } from '../../access/scopes.js';

/** The queries of resource reconciliation (domain, mailbox, alias, identity and token rows a manifest owns). */

export type OwnedDomainRow = Row<'domain', 'id' | 'name' | 'disabled_at'>;

/** The domain a resource key owns. */
export async function domainByResourceKey(trx: Sql, key: string): Promise<OwnedDomainRow | undefined> {
  return (
    await sql<OwnedDomainRow>`select id, name, disabled_at from domain
    where resource_key = ${key}`.execute(trx)
  ).rows[0];
}

/** Frees a resource key held by a (disabled) domain. */
export async function releaseDomainResourceKey(trx: Sql, domainId: string): Promise<void> {
  await sql`update domain set resource_key = null where id = ${domainId}`.execute(trx);
}

/** Disables the enabled domain a resource key owns; its id, undefined when there is none. */
export async function disableDomainByResourceKey(trx: Sql, key: string, at: Date): Promise<string | undefined> {
  return (
    await sql<Row<'domain', 'id'>>`update domain set disabled_at = ${at}
        where resource_key = ${key} and disabled_at is null returning id`.execute(trx)
  ).rows[0]?.id;
}

export type MailboxRow = Row<
  'mailbox',
  | 'id'
  | 'domain_id'
  | 'address'
  | 'display_name'
  | 'send_rate_limit_per_minute'
  | 'resource_key'
  | 'password_hash'
  | 'disabled_at'
  | 'created_at'
  | 'expires_at'
>;

const selectMailbox = sql`select id, domain_id, address, display_name, send_rate_limit_per_minute, resource_key, password_hash,
    disabled_at, created_at, expires_at from mailbox`;

/** Sets a declared mailbox's end (`spec.ttlSeconds` from its creation; null: it does not expire). */
export async function setMailboxExpiry(trx: Sql, mailboxId: string, expiresAt: Date | null): Promise<void> {
  await sql`update mailbox set expires_at = ${expiresAt} where id = ${mailboxId}`.execute(trx);
}

/**
 * Deletes the mailbox a resource key owns if it is past its end (the resource is gone, so its
 * tombstone goes too and the same name declared again starts afresh); its rows cascade.
 */
export async function deleteExpiredMailboxByResourceKey(trx: Sql, key: string, now: Date): Promise<boolean> {
  const r = await sql`delete from mailbox where resource_key = ${key} and expires_at <= ${now}`.execute(trx);
  return Number(r.numAffectedRows ?? 0) > 0;
}

export async function mailboxByResourceKey(trx: Sql, key: string): Promise<MailboxRow | undefined> {
  return (await sql<MailboxRow>`${selectMailbox} where resource_key = ${key}`.execute(trx)).rows[0];
}

export async function mailboxByAddress(trx: Sql, address: string): Promise<MailboxRow | undefined> {
  return (await sql<MailboxRow>`${selectMailbox} where address = ${address}`.execute(trx)).rows[0];
}

/** Frees a resource key held by a (disabled) mailbox. */
export async function releaseMailboxResourceKey(trx: Sql, mailboxId: string): Promise<void> {
  await sql`update mailbox set resource_key = null where id = ${mailboxId}`.execute(trx);
}

/** Writes a mailbox's declared fields and the owning key, re-enabling it. */
export async function updateDeclaredMailbox(
  trx: Sql,
  mailboxId: string,
  fields: { displayName: string; sendRateLimitPerMinute: number | null; resourceKey: string },
): Promise<MailboxRow> {
  return (
    await sql<MailboxRow>`update mailbox set display_name = ${fields.displayName}, send_rate_limit_per_minute = ${fields.sendRateLimitPerMinute},
        resource_key = ${fields.resourceKey}, disabled_at = null where id = ${mailboxId}
        returning id, domain_id, address, display_name, send_rate_limit_per_minute, resource_key, password_hash, disabled_at,
          created_at, expires_at`.execute(trx)
  ).rows[0]!;
}

/** Disables the enabled mailbox a resource key owns; its id, undefined when there is none. */
export async function disableMailboxByResourceKey(trx: Sql, key: string, at: Date): Promise<string | undefined> {
  return (
    await sql<Row<'mailbox', 'id'>>`update mailbox set disabled_at = ${at}
        where resource_key = ${key} and disabled_at is null returning id`.execute(trx)
  ).rows[0]?.id;
}

export async function setMailboxPasswordHash(trx: Sql, mailboxId: string, hash: string): Promise<void> {
  await sql`update mailbox set password_hash = ${hash} where id = ${mailboxId}`.execute(trx);
}

/** An active sender identity with this display name; true when a row changed. */
export async function upsertActiveIdentity(
  trx: Sql,
  mailboxId: string,
  address: string,
  displayName: string,
  now: Date,
): Promise<boolean> {
  const rows = (
    await sql`insert into sender_identity (id, mailbox_id, address, display_name, is_active, created_at)
    values (${newId(ID_PREFIX.identity)}, ${mailboxId}, ${address}, ${displayName}, true, ${now})
    on conflict (mailbox_id, address) do update set is_active = true, display_name = excluded.display_name
      where sender_identity.is_active = false or sender_identity.display_name <> excluded.display_name
    returning id`.execute(trx)
  ).rows;
  return rows.length > 0;
}

export type AliasRow = Row<'mailbox_alias', 'id' | 'mailbox_id' | 'address' | 'is_active'>;

/** The aliases of a mailbox and those (of any mailbox) among `addresses`. */
export async function aliasesOf(trx: Sql, mailboxId: string, addresses: readonly string[]): Promise<AliasRow[]> {
  return (
    await sql<AliasRow>`select id, mailbox_id, address, is_active
    from mailbox_alias where mailbox_id = ${mailboxId} or address = any(${[...addresses]}::text[])`.execute(trx)
  ).rows;
}

/** Which of `addresses` are a mailbox's primary address. */
export async function primaryAddressesAmong(trx: Sql, addresses: readonly string[]): Promise<Set<string>> {
  const rows = (
    await sql<Row<'mailbox', 'address'>>`select address from mailbox
    where address = any(${[...addresses]}::text[])`.execute(trx)
  ).rows;
  return new Set(rows.map((r) => r.address));
}

export async function insertAlias(trx: Sql, mailboxId: string, address: string, now: Date): Promise<void> {
  await sql`insert into mailbox_alias (id, mailbox_id, address, is_active, created_at)
        values (${newId(ID_PREFIX.alias)}, ${mailboxId}, ${address}, true, ${now})`.execute(trx);
}

export async function activateAlias(trx: Sql, aliasId: string): Promise<void> {
  await sql`update mailbox_alias set is_active = true where id = ${aliasId}`.execute(trx);
}

/** Deactivates aliases and sender identities of a mailbox (dropped aliases, deleted resource). */
export async function deactivateAddresses(trx: Sql, mailboxId: string, addresses: string[] | 'all'): Promise<void> {
  const which = addresses === 'all' ? sql`` : sql`and address = any(${addresses}::text[])`;
  await sql`update mailbox_alias set is_active = false where mailbox_id = ${mailboxId} and is_active ${which}`.execute(
    trx,
  );
  await sql`update sender_identity set is_active = false where mailbox_id = ${mailboxId} and is_active ${which}`.execute(
    trx,
  );
}

/** Serialises work on one resource across processes (a transaction-scoped advisory lock on `name`). */
export async function lockResourceName(trx: Sql, name: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${name}, 0))`.execute(trx);
}

/** The owner a resource's token is minted for. */
export interface ResourceTokenOwner {
  kind: TokenKind;
  domainId: string;
  mailboxId: string | null;
}

/** An enabled token of this owner by id and hash (expiry and scopes are the caller's to judge). */
export async function ownedToken(
  trx: Sql,
  owner: ResourceTokenOwner,
  tokenId: string,
  tokenHash: string,
): Promise<Row<'access_token', 'id' | 'expires_at' | 'scopes'> | undefined> {
  const ownerClause = owner.mailboxId === null ? sql`mailbox_id is null` : sql`mailbox_id = ${owner.mailboxId}`;
  return (
    await sql<Row<'access_token', 'id' | 'expires_at' | 'scopes'>>`select id, expires_at, scopes from access_token
    where id = ${tokenId} and token_hash = ${tokenHash} and kind = ${owner.kind} and domain_id = ${owner.domainId}
      and ${ownerClause} and disabled_at is null`.execute(trx)
  ).rows[0];
}
