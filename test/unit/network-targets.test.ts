import { describe, expect, it } from 'vitest';
import { isPermittedTarget, isPublicAddress, partitionTargets } from '../../src/core/net/network-targets.js';

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
    'not-an-address',
    '',
  ];
  const permitted = ['8.8.8.8', '93.184.216.34', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.4.4'];

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
