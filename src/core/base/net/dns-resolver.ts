import { Resolver } from 'node:dns/promises';
import { LRUCache } from 'lru-cache';

/** `resolve(name, rrtype)` with the result shapes of node:dns (mailauth's resolver contract too). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the result's shape depends on rrtype, as in node:dns and mailauth
export type DnsLookup = (name: string, rrtype: string) => Promise<any>;

/**
 * The resolver for SPF/DKIM/DMARC checks and MX lookups: DNS_SERVERS (`ip[:port]`, comma
 * separated) when set, else the system's servers. Short timeouts: an inbound session or a
 * delivery attempt must not hang on a dead name server (each lookup: 2 s, 2 tries). Answers are
 * cached for `cacheMs` (DNS_CACHE_TTL; see DnsAnswerCache).
 */
export function dnsResolver(servers: string | undefined, cacheMs = 0): DnsLookup {
  const resolver = new Resolver({ timeout: 2_000, tries: 2 });
  const list = (servers ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.length) resolver.setServers(list);
  const lookup: DnsLookup = (name, rrtype) => resolver.resolve(name, rrtype);
  if (cacheMs <= 0) return lookup;
  const cache = new DnsAnswerCache(cacheMs);
  return (name, rrtype) => cache.resolve(name, rrtype, lookup);
}

/** Answers that say the name or the record does not exist: as cacheable as an answer. */
const DEFINITIVE = new Set(['ENODATA', 'ENOTFOUND']);

/**
 * Answers by (type, name) for at most `ttlMs`, like the caching resolver a mail server sits
 * behind: every inbound message asks the same SPF and DMARC questions of its sender's domain
 * (bench/smtp: 0.2 ms of server CPU per message on 25, most of it building the exceptions of
 * the answers "no such name"). node:dns gives no TTL for TXT or MX, so the cap is the TTL: a
 * published change is seen within it. "No such name / no data" is cached too; a failure (time-out,
 * SERVFAIL) is not. Concurrent identical questions share one query. At most `maxEntries`
 * questions are kept (lru-cache: the least recently asked goes first).
 */
export class DnsAnswerCache {
  private readonly answers: LRUCache<string, Promise<unknown>>;

  constructor(ttlMs: number, maxEntries = 10_000) {
    this.answers = new LRUCache({ max: maxEntries, ttl: ttlMs });
  }

  resolve(name: string, rrtype: string, lookup: DnsLookup): Promise<unknown> {
    const key = `${rrtype} ${name.toLowerCase()}`;
    let answer = this.answers.get(key);
    if (!answer) {
      const asked = lookup(name, rrtype);
      answer = asked;
      this.answers.set(key, asked);
      asked.catch((err: { code?: string }) => {
        if (!DEFINITIVE.has(err.code ?? '') && this.answers.peek(key) === asked) this.answers.delete(key);
      });
    }
    return answer.then(copyOf);
  }
}

/** Each caller gets its own copy of an answer (a caller may sort or change what it got). */
const copyOf = (answer: unknown): unknown => structuredClone(answer);

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
  // RFC 7505: a single MX "../../flows/delivery" means the domain accepts no mail.
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
