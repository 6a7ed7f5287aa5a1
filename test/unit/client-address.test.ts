import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { clientAddressResolver } from '../../src/channels/shared/client-address.js';

// TRUST_PROXY (docs/api.md, "Client address"): the address comes from X-Forwarded-For through
// trusted hops only, read from the right; the leftmost entry, which the client writes, is never
// believed for being leftmost.
const resolver = (TRUST_PROXY?: string) => clientAddressResolver(loadConfig({ TRUST_PROXY }).TRUST_PROXY);

describe('TRUST_PROXY parsing', () => {
  it('accepts false/unset, a hop count (true = 1) or a comma list of CIDRs and bare addresses', () => {
    expect(loadConfig({}).TRUST_PROXY).toEqual({ kind: 'hops', hops: 0 });
    expect(loadConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY).toEqual({ kind: 'hops', hops: 0 });
    expect(loadConfig({ TRUST_PROXY: 'true' }).TRUST_PROXY).toEqual({ kind: 'hops', hops: 1 });
    expect(loadConfig({ TRUST_PROXY: '2' }).TRUST_PROXY).toEqual({ kind: 'hops', hops: 2 });
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, fd00::/8,192.0.2.1' }).TRUST_PROXY).toEqual({
      kind: 'cidrs',
      cidrs: ['10.0.0.0/8', 'fd00::/8', '192.0.2.1'],
    });
  });

  it('refuses anything else at start', () => {
    for (const bad of ['yes', '10.0.0.0/33', '10.0.0.0/8,nope', '-1', '1.5'])
      expect(() => loadConfig({ TRUST_PROXY: bad }), bad).toThrow(/invalid TRUST_PROXY/);
  });
});

describe('client address', () => {
  it('without trusted proxies is the socket peer, whatever X-Forwarded-For says', () => {
    for (const setting of [undefined, 'false', '0']) {
      const of = resolver(setting);
      expect(of('198.51.100.7', '203.0.113.1')).toBe('198.51.100.7');
      expect(of('198.51.100.7', undefined)).toBe('198.51.100.7');
    }
  });

  it('with 1 hop is the rightmost entry, never the spoofed leftmost', () => {
    const of = resolver('1');
    expect(of('10.0.0.2', '203.0.113.1')).toBe('203.0.113.1');
    // The client wrote "6.6.6.6"; the proxy appended the address it saw.
    expect(of('10.0.0.2', '6.6.6.6, 203.0.113.1')).toBe('203.0.113.1');
    expect(of('10.0.0.2', ['6.6.6.6', '7.7.7.7, 203.0.113.1'])).toBe('203.0.113.1');
    // No header: the proxy itself is the client (a health check, a direct call).
    expect(of('10.0.0.2', undefined)).toBe('10.0.0.2');
    expect(resolver('true')('10.0.0.2', '6.6.6.6, 203.0.113.1')).toBe('203.0.113.1');
  });

  it('with 2 hops is the second entry from the right', () => {
    const of = resolver('2');
    expect(of('10.0.0.2', '6.6.6.6, 203.0.113.1, 10.0.0.1')).toBe('203.0.113.1');
    expect(of('10.0.0.2', '203.0.113.1, 10.0.0.1')).toBe('203.0.113.1');
    // Fewer entries than hops: the furthest address there is.
    expect(of('10.0.0.2', '10.0.0.1')).toBe('10.0.0.1');
  });

  it('with CIDRs walks from the right while the hop is trusted', () => {
    const of = resolver('10.0.0.0/8,2001:db8::/32');
    expect(of('10.0.0.2', '6.6.6.6, 203.0.113.1, 10.1.2.3')).toBe('203.0.113.1');
    expect(of('2001:db8::5', '203.0.113.1')).toBe('203.0.113.1');
    // An untrusted peer is the client, whatever it claims.
    expect(of('198.51.100.7', '203.0.113.1')).toBe('198.51.100.7');
    // A client claiming to be a trusted proxy only moves the walk past its own claim.
    expect(of('10.0.0.2', '6.6.6.6, 10.9.9.9, 203.0.113.1')).toBe('203.0.113.1');
    // Every hop trusted: the leftmost one, which is then a proxy of ours.
    expect(of('10.0.0.2', '10.0.0.7, 10.0.0.8')).toBe('10.0.0.7');
  });

  it('normalises IPv4-mapped IPv6 and matches it against IPv4 ranges', () => {
    expect(resolver()('::ffff:198.51.100.7', undefined)).toBe('198.51.100.7');
    expect(resolver('10.0.0.0/8')('::ffff:10.0.0.2', '::ffff:203.0.113.1')).toBe('203.0.113.1');
    expect(resolver('::ffff:10.0.0.0/104')('10.0.0.2', '203.0.113.1')).toBe('203.0.113.1');
    expect(resolver('1')('10.0.0.2', '2001:DB8:0:0::1')).toBe('2001:db8::1');
  });

  it('accepts ports and brackets proxies write, and stops at an entry that is not an address', () => {
    const of = resolver('2');
    expect(of('10.0.0.2', '203.0.113.1:4711, 10.0.0.1')).toBe('203.0.113.1');
    expect(of('10.0.0.2', '[2001:db8::1]:443, 10.0.0.1')).toBe('2001:db8::1');
    expect(of('10.0.0.2', 'unknown, 10.0.0.1')).toBe('10.0.0.1');
    expect(of('10.0.0.2', '127.1, 10.0.0.1')).toBe('10.0.0.1');
    expect(resolver('1')('10.0.0.2', '')).toBe('10.0.0.2');
  });

  it('has no address without a socket peer', () => {
    expect(resolver('1')(undefined, '203.0.113.1')).toBeNull();
  });
});
