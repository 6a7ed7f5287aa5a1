import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dnsResolver } from '../../src/core/base/net/dns-resolver.js';
import { startDnsStub } from './dns-stub.js';

// DNS_CACHE_TTL: the inbound checks ask the same SPF/DMARC questions for every message of a
// sender; answers and "no such name" are reused for the TTL, failures never (dns-resolver.ts).

let dns: Awaited<ReturnType<typeof startDnsStub>>;
beforeAll(async () => {
  dns = await startDnsStub({ 'sender.test': { TXT: ['v=spf1 -all'] } });
});
afterAll(() => dns?.close());

describe('DNS answer cache', () => {
  it('asks the server once per question within the TTL, answers and "no such name" alike', async () => {
    const lookup = dnsResolver(dns.server, 60_000);
    const before = dns.queries;
    const first = await lookup('sender.test', 'TXT');
    expect(first).toEqual([['v=spf1 -all']]);
    first.push(['changed by the caller']); // a caller's change stays its own
    expect(await lookup('SENDER.test', 'TXT')).toEqual([['v=spf1 -all']]);
    await expect(lookup('nowhere.test', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(lookup('nowhere.test', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    expect(dns.queries - before).toBe(2);
    // Concurrent identical questions share one query.
    await Promise.all([lookup('other.test', 'TXT'), lookup('other.test', 'TXT')].map((p) => p.catch(() => null)));
    expect(dns.queries - before).toBe(3);
  });

  it('sees a published change once the TTL has passed', async () => {
    const lookup = dnsResolver(dns.server, 100);
    dns.records['fresh.test'] = { TXT: ['v=spf1 ~all'] };
    expect(await lookup('fresh.test', 'TXT')).toEqual([['v=spf1 ~all']]);
    dns.records['fresh.test'] = { TXT: ['v=spf1 -all'] };
    expect(await lookup('fresh.test', 'TXT')).toEqual([['v=spf1 ~all']]);
    await new Promise((r) => setTimeout(r, 150));
    expect(await lookup('fresh.test', 'TXT')).toEqual([['v=spf1 -all']]);
  });

  it('does not keep a failure (SERVFAIL, time-out): the next question asks again', async () => {
    dns.records['broken.test'] = { servfail: true };
    const lookup = dnsResolver(dns.server, 60_000);
    const before = dns.queries;
    await expect(lookup('broken.test', 'TXT')).rejects.toMatchObject({ code: 'ESERVFAIL' });
    const afterFirst = dns.queries;
    expect(afterFirst).toBeGreaterThan(before);
    await expect(lookup('broken.test', 'TXT')).rejects.toMatchObject({ code: 'ESERVFAIL' });
    expect(dns.queries).toBeGreaterThan(afterFirst);
  });

  it('with DNS_CACHE_TTL=0 asks every time', async () => {
    const lookup = dnsResolver(dns.server, 0);
    const before = dns.queries;
    await lookup('sender.test', 'TXT');
    await lookup('sender.test', 'TXT');
    expect(dns.queries - before).toBe(2);
  });
});
