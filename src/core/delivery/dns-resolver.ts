import { Resolver } from 'node:dns/promises';

/** `resolve(name, rrtype)` with the result shapes of node:dns (mailauth's resolver contract too). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the result's shape depends on rrtype, as in node:dns and mailauth
export type DnsLookup = (name: string, rrtype: string) => Promise<any>;

/**
 * The resolver for SPF/DKIM/DMARC checks and MX lookups: DNS_SERVERS (`ip[:port]`, comma
 * separated) when set, else the system's servers. Short timeouts: an inbound session or a
 * delivery attempt must not hang on a dead name server (each lookup: 2 s, 2 tries).
 */
export function dnsResolver(servers: string | undefined): DnsLookup {
  const resolver = new Resolver({ timeout: 2_000, tries: 2 });
  const list = (servers ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length) resolver.setServers(list);
  return (name, rrtype) => resolver.resolve(name, rrtype);
}

/** MX hosts of a domain by preference (RFC 5321 §5.1), the domain itself when it has none. */
export async function mxHosts(lookup: DnsLookup, domain: string): Promise<string[] | 'null-mx'> {
  let records: { exchange: string; priority: number }[] = [];
  try {
    records = await lookup(domain, 'MX');
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== 'ENODATA' && code !== 'ENOTFOUND') throw err;
    if (code === 'ENOTFOUND') throw Object.assign(new Error(`${domain} does not exist`), { permanent: true });
  }
  if (records.length === 0) return [domain]; // implicit MX
  // RFC 7505: a single MX "." means the domain accepts no mail.
  if (records.length === 1 && (records[0]!.exchange === '' || records[0]!.exchange === '.')) return 'null-mx';
  return [...records].sort((a, b) => a.priority - b.priority).map((r) => r.exchange);
}

/** IPv4 then IPv6 addresses of a host through the configured servers. */
export async function hostAddresses(lookup: DnsLookup, host: string): Promise<string[]> {
  const [v4, v6] = await Promise.allSettled([lookup(host, 'A'), lookup(host, 'AAAA')]);
  return [
    ...(v4.status === 'fulfilled' ? (v4.value as string[]) : []),
    ...(v6.status === 'fulfilled' ? (v6.value as string[]) : []),
  ];
}
