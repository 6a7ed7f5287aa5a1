import type { Database, Sql } from '../../../storage/database.js';
import { hostedDkimKeys, hostedDomainNames } from './hosted-dkim.store.js';
import type { DnsLookup } from '../../base/net/dns-resolver.js';

/**
 * The resolver inbound verification uses: DKIM key records (`<selector>._domainkey.<domain>`) of a
 * domain hosted here come from our own dkim_key table, never from DNS, so "signed by that domain's
 * key" means signed by our key (docs/contract.md, "Sender integrity and inbound trust"), whatever the
 * public DNS says or whether it answers at all. Every other name goes to `dns`.
 */
export function hostedDkimLookup(db: Database, dns: DnsLookup): DnsLookup {
  return async (name, rrtype) => {
    const m = /^([^.]+)\._domainkey\.(.+?)\.?$/i.exec(name);
    if (rrtype !== 'TXT' || !m) return dns(name, rrtype);
    const [, selector, domain] = m;
    const rows = await hostedDkimKeys(db, domain!.toLowerCase());
    if (rows.length === 0) return dns(name, rrtype);
    const key = rows.find((r) => r.selector?.toLowerCase() === selector!.toLowerCase());
    if (!key?.public_key) throw Object.assign(new Error(`no DKIM key ${name} here`), { code: 'ENOTFOUND' });
    return [[`v=DKIM1; k=rsa; p=${key.public_key}`]];
  };
}

/** The hosted domains (enabled or not) among `domains`, lower-case; `on` a transaction to ask in. */
export async function hostedDomains(db: Database, domains: readonly string[], on?: Sql): Promise<string[]> {
  return hostedDomainNames(db, domains, on);
}
