import { describe, expect, it } from 'vitest';
import { isPermittedTarget, isPublicAddress, partitionTargets } from '../../src/core/base/net/network-targets.js';

describe('network targets (docs/api.md, Network targets)', () => {
  const refused = [
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '100.64.0.1', // carrier-grade NAT
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254', // AWS metadata over IPv6
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::127.0.0.1', // IPv4-compatible (::/96)
    '::7f00:1',
    '::10.0.0.1',
    '::8.8.8.8', // IPv4-compatible is deprecated whatever it carries
    '64:ff9b::7f00:1', // NAT64 of 127.0.0.1
    '64:ff9b::a00:1', // NAT64 of 10.0.0.1
    '64:ff9b:1::a00:1', // local-use NAT64
    '2002:7f00:1::1', // 6to4 of 127.0.0.1
    '2002:a00:1::1', // 6to4 of 10.0.0.1
    '2002:c0a8:101::1', // 6to4 of 192.168.1.1
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    'fd12:3456:789a::1', // ULA
    'fe80::1%eth0',
    'febf::1', // link-local, top of fe80::/10
    'fec0::1', // site-local (deprecated)
    'ff02::1', // multicast
    'ff0e::1',
    '2001:db8::1', // documentation
    '3fff::1', // documentation (3fff::/20)
    '100::1', // discard-only
    '4000::1', // outside 2000::/3
    '5f00::1', // segment routing
    '::ffff:169.254.169.254',
    'not-an-address',
    '',
  ];
  const permitted = [
    '8.8.8.8',
    '93.184.216.34',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '3ffe::1',
    '::ffff:8.8.4.4',
  ];

  it.each(refused)('refuses %s by default', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
    expect(isPermittedTarget(ip, { allowPrivate: false })).toBe(false);
  });

  it.each(permitted)('permits public %s', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
    expect(isPermittedTarget(ip, { allowPrivate: false })).toBe(true);
  });

  it('permits private addresses only when ALLOW_PRIVATE_NETWORK_TARGETS is on, never a non-address', () => {
    expect(isPermittedTarget('127.0.0.1', { allowPrivate: true })).toBe(true);
    expect(isPermittedTarget('10.0.0.1', { allowPrivate: true })).toBe(true);
    expect(isPermittedTarget('localhost', { allowPrivate: true })).toBe(false);
  });

  it('partitions a resolved list', () => {
    expect(partitionTargets(['8.8.8.8', '127.0.0.1', '10.0.0.2'], { allowPrivate: false })).toEqual({
      permitted: ['8.8.8.8'],
      refused: ['127.0.0.1', '10.0.0.2'],
    });
  });
});
