import { isAppError } from '../../base/errors.js';
import { splitAddress } from '../../base/address.js';
import { findDomainByName } from '../../state/domains/domain.store.js';
import { insertMailbox } from '../../state/mailboxes/mailbox.store.js';
import type { Sql } from '../../../storage/database.js';
import { declareMailboxQuota } from '../../state/quota/storage-quota.store.js';
import {
  activateAlias,
  aliasesOf,
  deactivateAddresses,
  insertAlias,
  mailboxByAddress,
  mailboxByResourceKey,
  primaryAddressesAmong,
  releaseMailboxResourceKey,
  setMailboxExpiry,
  updateDeclaredMailbox,
  upsertActiveIdentity,
  type MailboxRow,
} from './resource.store.js';
import { resourceKeyOf, refOf, type MailboxResource } from './manifest.schema.js';
import { NotReadyError, type Problem } from './not-ready.js';
import type { RowOutcome } from './domain-converge.js';
import { writeDeclaredPolicy } from '../policy/policy.store.js';
import { mailboxPolicySchema } from '../../access/policy.schemas.js';

/**
 * Converges a Mailbox resource's rows: the mailbox (created, adopted, updated or re-enabled),
 * its primary sender identity, and its aliases with their sender identities. The password and
 * the token are the reconciler's, as they need the secret store.
 */
export async function convergeMailboxRows(
  trx: Sql,
  res: MailboxResource,
  now: Date,
): Promise<{ mailbox: MailboxRow; outcome: RowOutcome; problems: Problem[]; expired: boolean }> {
  const key = resourceKeyOf(refOf(res));
  const { address } = res.spec;
  const domainName = splitAddress(address).domain;
  const domain = await findDomainByName(trx, domainName);
  if (!domain || domain.disabled_at)
    throw new NotReadyError(
      'DomainNotFound',
      `domain ${domainName} does not exist or is disabled; declare a Domain for it`,
    );

  const owned = await mailboxByResourceKey(trx, key);
  // An ephemeral mailbox past its end stays ended while its resource exists: never re-created.
  if (owned?.expires_at && new Date(owned.expires_at).getTime() <= now.getTime()) {
    const problem = { reason: 'Expired', message: `mailbox ${owned.address} expired (spec.ttlSeconds)` };
    return { mailbox: owned, outcome: 'unchanged', problems: [problem], expired: true };
  }
  if (owned && owned.address !== address) {
    if (!owned.disabled_at)
      throw new NotReadyError(
        'SpecImmutable',
        `spec.address is immutable: this resource declares ${owned.address}; delete it and declare a new one for ${address}`,
      );
    await releaseMailboxResourceKey(trx, owned.id);
  }
  const existing = await mailboxByAddress(trx, address);
  if (existing?.resource_key && existing.resource_key !== key && !existing.disabled_at) {
    throw new NotReadyError('AddressConflict', `${address} is already declared by Mailbox ${existing.resource_key}`);
  }
  const displayName = res.spec.displayName ?? '';
  const limit = res.spec.sendRateLimitPerMinute ?? null;
  const ttlMs = res.spec.ttlSeconds === undefined ? null : res.spec.ttlSeconds * 1000;
  let outcome: RowOutcome = 'unchanged';
  let mailbox: MailboxRow;
  if (!existing) {
    try {
      const id = await insertMailbox(
        trx,
        {
          domainId: domain.id,
          address,
          displayName,
          resourceKey: key,
          sendRateLimitPerMinute: limit,
          expiresAt: ttlMs === null ? null : new Date(now.getTime() + ttlMs),
        },
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
        created_at: now.toISOString(),
        expires_at: ttlMs === null ? null : new Date(now.getTime() + ttlMs).toISOString(),
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
      mailbox = await updateDeclaredMailbox(trx, existing.id, {
        displayName,
        sendRateLimitPerMinute: limit,
        resourceKey: key,
      });
      outcome = 'updated';
    }
    // The end counts from the mailbox's creation, so a changed ttlSeconds moves it and a resync does not.
    const wanted = ttlMs === null ? null : new Date(new Date(mailbox.created_at).getTime() + ttlMs);
    if ((wanted?.getTime() ?? null) !== (mailbox.expires_at === null ? null : new Date(mailbox.expires_at).getTime())) {
      await setMailboxExpiry(trx, mailbox.id, wanted);
      mailbox = { ...mailbox, expires_at: wanted?.toISOString() ?? null };
      if (outcome === 'unchanged') outcome = 'updated';
    }
  }
  // A declared policy is the manifest's to own; without one the API's PUT decides (docs/api.md).
  if (res.spec.policy !== undefined) {
    const policyChanged = await writeDeclaredPolicy(trx, mailbox.id, mailboxPolicySchema.parse(res.spec.policy));
    if (policyChanged && outcome === 'unchanged') outcome = 'updated';
  }
  // A declared quota is the manifest's to own, like the policy; without one the API's PUT decides.
  if (res.spec.storageQuotaBytes !== undefined) {
    const changed = await declareMailboxQuota(trx, mailbox.id, res.spec.storageQuotaBytes);
    if (changed && outcome === 'unchanged') outcome = 'updated';
  }
  const identityChanged = await upsertActiveIdentity(trx, mailbox.id, address, displayName, now);
  const aliases = await convergeAliases(trx, mailbox.id, res.spec.aliases ?? [], displayName, now);
  if (outcome === 'unchanged' && (identityChanged || aliases.changed)) outcome = 'updated';
  return { mailbox, outcome, problems: aliases.problems, expired: false };
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
  const rows = await aliasesOf(trx, mailboxId, desired);
  const primaries = await primaryAddressesAmong(trx, desired);
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
      await insertAlias(trx, mailboxId, alias, now);
      changed = true;
    } else if (!row.is_active) {
      await activateAlias(trx, row.id);
      changed = true;
    }
    if (await upsertActiveIdentity(trx, mailboxId, alias, displayName, now)) changed = true;
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
