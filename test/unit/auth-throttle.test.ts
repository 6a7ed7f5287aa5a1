import { describe, expect, it } from 'vitest';
import { AuthThrottle, clientKey } from '../../src/core/auth/auth-throttle.js';
import { AppError } from '../../src/core/errors.js';

// The credential-failure budget (docs/api.md, "Brute force and revocation"), in memory.

const wrong = () => Promise.reject(new AppError('UNAUTHENTICATED'));
const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (e: AppError) => e.code);

describe('clientKey', () => {
  it('counts an IPv4-mapped address as IPv4 and IPv6 per /64', () => {
    expect(clientKey('127.0.0.1')).toBe('127.0.0.1');
    expect(clientKey('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(clientKey('::FFFF:10.1.2.3')).toBe('10.1.2.3');
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
  });
});

describe('AuthThrottle', () => {
  it('bounds parallel failing checks of an address that has failed to the budget, then refuses with Retry-After before running any', async () => {
    const throttle = new AuthThrottle(null, 5);
    await codeOf(throttle.attempt('192.0.2.1', wrong));
    let ran = 0;
    const codes = await Promise.all(Array.from({ length: 100 }, () => codeOf(throttle.attempt('192.0.2.1', () => { ran++; return wrong(); }))));
    expect(ran).toBe(4);
    expect(codes.filter((c) => c === 'UNAUTHENTICATED')).toHaveLength(4);
    expect(codes.filter((c) => c === 'AUTH_THROTTLED')).toHaveLength(96);
    const refused = await throttle.assertAllowed('192.0.2.1').catch((e: AppError) => e);
    expect(refused).toMatchObject({ code: 'AUTH_THROTTLED', status: 429 });
    expect((refused as AppError).retryAfterSeconds).toBeGreaterThan(800);
    // Another address, and another /64 of IPv6, still has its budget; the same /64 does not.
    await expect(throttle.assertAllowed('192.0.2.2')).resolves.toBeUndefined();
    for (let i = 0; i < 5; i++) await codeOf(throttle.attempt(`2001:db8:0:1::${i + 1}`, wrong));
    await expect(throttle.assertAllowed('2001:db8:0:1::ffff')).rejects.toMatchObject({ code: 'AUTH_THROTTLED' });
    await expect(throttle.assertAllowed('2001:db8:0:2::1')).resolves.toBeUndefined();
  });

  it('never refuses any number of concurrent good checks from an address without failures', async () => {
    const throttle = new AuthThrottle(null, 3);
    const results = await Promise.all(Array.from({ length: 200 }, () => throttle.attempt('192.0.2.7', async () => { await new Promise((r) => setTimeout(r, 5)); return 'principal'; })));
    expect(results.every((r) => r === 'principal')).toBe(true);
    await expect(throttle.assertAllowed('192.0.2.7')).resolves.toBeUndefined();
  });

  it('costs nothing when the credential was good or the check failed for another reason', async () => {
    const throttle = new AuthThrottle(null, 2);
    for (let i = 0; i < 10; i++) expect(await throttle.attempt('192.0.2.9', async () => 'principal')).toBe('principal');
    for (let i = 0; i < 10; i++) await codeOf(throttle.attempt('192.0.2.9', () => Promise.reject(new Error('database down'))));
    await expect(throttle.assertAllowed('192.0.2.9')).resolves.toBeUndefined();
    await throttle.recordFailure('192.0.2.9');
    await codeOf(throttle.attempt('192.0.2.9', wrong));
    await expect(throttle.assertAllowed('::ffff:192.0.2.9')).rejects.toMatchObject({ code: 'AUTH_THROTTLED' });
  });
});
