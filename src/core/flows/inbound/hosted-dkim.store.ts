import { sql, type Database, type Sql } from '../../../storage/database.js';
import type { Col } from '../../../storage/rows.js';

/** The DKIM keys (selector and public key) of a hosted domain; one row with nulls for a domain without a key, none for a domain not hosted here. */
export async function hostedDkimKeys(
  db: Database,
  domain: string,
): Promise<{ selector: Col<'dkim_key', 'selector'> | null; public_key: Col<'dkim_key', 'public_key'> | null }[]> {
  return db.rows(sql<{ selector: string | null; public_key: string | null }>`
      select k.selector, k.public_key from domain d left join dkim_key k on k.domain_id = d.id
      where d.name = ${domain}`);
}

/** The hosted domains (enabled or not) among `domains`; `on` a transaction to ask in. */
export async function hostedDomainNames(db: Database, domains: readonly string[], on?: Sql): Promise<string[]> {
  if (domains.length === 0) return [];
  const rows = await db.rows(
    sql<{ name: Col<'domain', 'name'> }>`select name from domain where name = any(${[...domains]}::text[])`,
    on,
  );
  return rows.map((r) => r.name);
}
