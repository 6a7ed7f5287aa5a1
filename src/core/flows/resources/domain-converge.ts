import { findDomainByName, upsertDomain } from '../../state/domains/domain.store.js';
import type { Sql } from '../../../storage/database.js';
import { domainByResourceKey, releaseDomainResourceKey } from './resource.store.js';
import { declareDomainDefaultQuota } from '../../state/quota/storage-quota.store.js';
import { resourceKeyOf, refOf, type DomainResource } from './manifest.schema.js';
import { NotReadyError } from './not-ready.js';

export type RowOutcome = 'created' | 'updated' | 'unchanged';

/**
 * Converges the domain row of a Domain resource: created, adopted when it exists without a
 * resource, re-enabled when its resource was deleted and is declared again.
 */
export async function convergeDomainRow(
  trx: Sql,
  res: DomainResource,
  now: Date,
): Promise<{ domainId: string; outcome: RowOutcome }> {
  const key = resourceKeyOf(refOf(res));
  const name = res.spec.domain;
  const owned = await domainByResourceKey(trx, key);
  if (owned && owned.name !== name) {
    if (!owned.disabled_at) {
      throw new NotReadyError(
        'SpecImmutable',
        `spec.domain is immutable: this resource declares ${owned.name}; delete it and declare a new one for ${name}`,
      );
    }
    // The old domain's resource was deleted earlier; the key is free for the new declaration.
    await releaseDomainResourceKey(trx, owned.id);
  }
  const existing = await findDomainByName(trx, name);
  if (existing?.resource_key && existing.resource_key !== key && !existing.disabled_at) {
    throw new NotReadyError('DomainConflict', `${name} is already declared by Domain ${existing.resource_key}`);
  }
  const limit = res.spec.sendRateLimitPerMinute ?? null;
  if (
    existing &&
    existing.resource_key === key &&
    !existing.disabled_at &&
    existing.send_rate_limit_per_minute === limit
  ) {
    const quotaChanged = await convergeDefaultQuota(trx, existing.id, res);
    return { domainId: existing.id, outcome: quotaChanged ? 'updated' : 'unchanged' };
  }
  const domainId = await upsertDomain(trx, { name, sendRateLimitPerMinute: limit, resourceKey: key }, now);
  await convergeDefaultQuota(trx, domainId, res);
  return { domainId, outcome: existing ? 'updated' : 'created' };
}

/** A declared `spec.defaultStorageQuotaBytes` is the manifest's to own; without one the API decides. */
async function convergeDefaultQuota(trx: Sql, domainId: string, res: DomainResource): Promise<boolean> {
  const quota = res.spec.defaultStorageQuotaBytes;
  if (quota === undefined) return false;
  return declareDomainDefaultQuota(trx, domainId, quota);
}
