import { AppError } from '../../base/errors.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import { isDomainName, normalizeDomain } from '../../base/address.js';
import { sql, type Sql } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';

export type DomainRow = Row<'domain', 'id' | 'name' | 'send_rate_limit_per_minute' | 'resource_key' | 'disabled_at'>;

/** Creates the domain or updates the declared fields of an existing one; returns its id. */
export async function upsertDomain(
  trx: Sql,
  d: { name: string; sendRateLimitPerMinute?: number | null; resourceKey?: string | null },
  now = new Date(),
): Promise<string> {
  const name = normalizeDomain(d.name);
  if (!isDomainName(name)) throw new AppError('VALIDATION_FAILED', `${d.name} is not a domain name.`);
  const row = (
    await sql<Row<'domain', 'id'>>`insert into domain (id, name, send_rate_limit_per_minute, resource_key, created_at)
    values (${newId(ID_PREFIX.domain)}, ${name}, ${d.sendRateLimitPerMinute ?? null}, ${d.resourceKey ?? null}, ${now})
    on conflict (name) do update set send_rate_limit_per_minute = excluded.send_rate_limit_per_minute,
      resource_key = coalesce(excluded.resource_key, domain.resource_key), disabled_at = null
    returning id`.execute(trx)
  ).rows[0]!;
  return row.id;
}

export async function findDomainByName(trx: Sql, name: string): Promise<DomainRow | undefined> {
  return (
    await sql<DomainRow>`select id, name, send_rate_limit_per_minute, resource_key, disabled_at from domain where name = ${normalizeDomain(name)}`.execute(
      trx,
    )
  ).rows[0];
}
