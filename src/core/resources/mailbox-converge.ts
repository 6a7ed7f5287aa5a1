import { isAppError } from '../errors.js';
import { ID_PREFIX, newId } from '../ids.js';
import { splitAddress } from '../address.js';
import { findDomainByName } from '../domains/domain.store.js';
import { insertMailbox } from '../mailboxes/mailbox.store.js';
import { sql, type Sql } from '../../storage/database.js';
import { resourceKeyOf, refOf, type MailboxResource } from './manifest.schema.js';
import { NotReadyError, type Problem } from './not-ready.js';
import type { RowOutcome } from './domain-converge.js';
import { writeDeclaredPolicy } from '../policy/policy.store.js';
import { mailboxPolicySchema } from '../policy/policy.schemas.js';

export interface MailboxRow {
  id: string;
  domain_id: string;
  address: string;
  display_name: string;
  send_rate_limit_per_minute: number | null;
  resource_key: string | null;
  password_hash: string | null;
  disabled_at: string | null;
}

const selectMailbox = sql`select id, domain_id, address, display_name, send_rate_limit_per_minute, resource_key, password_hash, disabled_at from mailbox`;

/**
 * Converges a Mailbox resource's rows: the mailbox (created, adopted, updated or re-enabled),
 * its primary sender identity, and its aliases with their sender identities. The password and
 * the token are the reconciler's, as they need the secret store.
 */
export async function convergeMailboxRows(
  trx: Sql,
  res: MailboxResource,
  now: Date,
): Promise<{ mailbox: MailboxRow; outcome: RowOutcome; problems: Problem[] }> {
  const key = resourceKeyOf(refOf(res));
  const { address } = res.spec;
  const domainName = splitAddress(address).domain;
  const domain = await findDomainByName(trx, domainName);
  if (!domain || domain.disabled_at)
    throw new NotReadyError(
      'DomainNotFound',
      `domain ${domainName} does not exist or is disabled; declare a Domain for it`,
    );

  const owned = (await sql<MailboxRow>`${selectMailbox} where resource_key = ${key}`.execute(trx)).rows[0];
  if (owned && owned.address !== address) {
    if (!owned.disabled_at)
      throw new NotReadyError(
        'SpecImmutable',
        `spec.address is immutable: this resource declares ${owned.address}; delete it and declare a new one for ${address}`,
      );
    await sql`update mailbox set resource_key = null where id = ${owned.id}`.execute(trx);
  }
  const existing = (await sql<MailboxRow>`${selectMailbox} where address = ${address}`.execute(trx)).rows[0];
  if (existing?.resource_key && existing.resource_key !== key && !existing.disabled_at) {
    throw new NotReadyError('AddressConflict', `${address} is already declared by Mailbox ${existing.resource_key}`);
  }
  const displayName = res.spec.displayName ?? '';
  const limit = res.spec.sendRateLimitPerMinute ?? null;
  let outcome: RowOutcome = 'unchanged';
  let mailbox: MailboxRow;
  if (!existing) {
    try {
      const id = await insertMailbox(
        trx,
        { domainId: domain.id, address, displayName, resourceKey: key, sendRateLimitPerMinute: limit },
        now,
      );
      mailbox = {
        id,
        domain_id: domain.id,
        address,
        display_name: displayName,
        send_rate_limit_per_minute: limit,
        resource_key: key,
        password_hash: null,
        disabled_at: null,
      };
      outcome = 'created';
    } catch (err) {
      // The address is an alias of another mailbox (one namespace for both).
      if (isAppError(err) && err.code === 'MAILBOX_EXISTS')
        throw new NotReadyError('AddressConflict', `${address} is already an alias of another mailbox`);
      throw err;
    }
  } else {
    mailbox = existing;
    // Adopting a mailbox made through the API (resource_key null) is deliberate: the manifest
    // then owns it, including disabling it when the manifest is deleted.
    if (
      existing.display_name !== displayName ||
      existing.send_rate_limit_per_minute !== limit ||
      existing.resource_key !== key ||
      existing.disabled_at
    ) {
      mailbox = (
        await sql<MailboxRow>`update mailbox set display_name = ${displayName}, send_rate_limit_per_minute = ${limit},
        resource_key = ${key}, disabled_at = null where id = ${existing.id}
        returning id, domain_id, address, display_name, send_rate_limit_per_minute, resource_key, password_hash, disabled_at`.execute(
          trx,
        )
      ).rows[0]!;
      outcome = 'updated';
    }
  }
  // A declared policy is the manifest's to own; without one the API's PUT decides (docs/api.md).
  if (res.spec.policy !== undefined) {
    const policyChanged = await writeDeclaredPolicy(trx, mailbox.id, mailboxPolicySchema.parse(res.spec.policy));
    if (policyChanged && outcome === 'unchanged') outcome = 'updated';
  }
  // A declared quota is the manifest's to own, like the policy; without one the API's PUT decides.
  if (res.spec.storageQuotaBytes !== undefined) {
    const changed = await sql`update mailbox set storage_quota_bytes = ${res.spec.storageQuotaBytes}
      where id = ${mailbox.id} and storage_quota_bytes is distinct from ${res.spec.storageQuotaBytes}::bigint`.execute(
      trx,
    );
    if (Number(changed.numAffectedRows ?? 0) > 0 && outcome === 'unchanged') outcome = 'updated';
  }
  const identityChanged = await ensureIdentity(trx, mailbox.id, address, displayName, now);
  const aliases = await convergeAliases(trx, mailbox.id, res.spec.aliases ?? [], displayName, now);
  if (outcome === 'unchanged' && (identityChanged || aliases.changed)) outcome = 'updated';
  return { mailbox, outcome, problems: aliases.problems };
}

/** An active sender identity with the mailbox's display name; true when a row changed. */
async function ensureIdentity(
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

/**
 * Declared aliases become active alias rows and active sender identities; aliases no longer
 * declared are deactivated, not deleted, so mail threads and history keep their addresses.
 * An alias held by another mailbox is a problem for that alias only.
 */
async function convergeAliases(
  trx: Sql,
  mailboxId: string,
  desired: string[],
  displayName: string,
  now: Date,
): Promise<{ changed: boolean; problems: Problem[] }> {
  const rows = (
    await sql<{
      id: string;
      mailbox_id: string;
      address: string;
      is_active: boolean;
    }>`select id, mailbox_id, address, is_active
    from mailbox_alias where mailbox_id = ${mailboxId} or address = any(${desired}::text[])`.execute(trx)
  ).rows;
  const primaries = new Set(
    (
      await sql<{ address: string }>`select address from mailbox
    where address = any(${desired}::text[])`.execute(trx)
    ).rows.map((r) => r.address),
  );
  const problems: Problem[] = [];
  let changed = false;
  for (const alias of desired) {
    const row = rows.find((r) => r.address === alias);
    if (primaries.has(alias) || (row && row.mailbox_id !== mailboxId)) {
      problems.push({
        reason: 'AliasConflict',
        message: `alias ${alias} is already the address or an alias of another mailbox`,
      });
      continue;
    }
    if (!row) {
      await sql`insert into mailbox_alias (id, mailbox_id, address, is_active, created_at)
        values (${newId(ID_PREFIX.alias)}, ${mailboxId}, ${alias}, true, ${now})`.execute(trx);
      changed = true;
    } else if (!row.is_active) {
      await sql`update mailbox_alias set is_active = true where id = ${row.id}`.execute(trx);
      changed = true;
    }
    if (await ensureIdentity(trx, mailboxId, alias, displayName, now)) changed = true;
  }
  const dropped = rows
    .filter((r) => r.mailbox_id === mailboxId && r.is_active && !desired.includes(r.address))
    .map((r) => r.address);
  if (dropped.length > 0) {
    await deactivateAddresses(trx, mailboxId, dropped);
    changed = true;
  }
  return { changed, problems };
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
