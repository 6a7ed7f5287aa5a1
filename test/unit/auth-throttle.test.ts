import { describe, expect, it } from 'vitest';
import { AuthThrottle, clientKey } from '../../src/core/access/auth-throttle.js';
import { AppError } from '../../src/core/base/errors.js';

// The credential-failure budget (docs/api.md, "Brute force and revocation"), in memory.

const failure = () => new AppError('UNAUTHENTICATED');
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: AppError) => e.code,
  );

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
  it('answers exactly the budget of concurrent failures as themselves, then AUTH_THROTTLED with Retry-After', async () => {
    const throttle = new AuthThrottle(null, 5);
    const codes = await Promise.all(Array.from({ length: 100 }, () => codeOf(throttle.refuse('192.0.2.1', failure()))));
    expect(codes.filter((c) => c === 'UNAUTHENTICATED')).toHaveLength(5);
    expect(codes.filter((c) => c === 'AUTH_THROTTLED')).toHaveLength(95);
    const refused = await throttle.refuse('192.0.2.1', failure()).catch((e: AppError) => e);
    expect(refused).toMatchObject({ code: 'AUTH_THROTTLED', status: 429 });
    expect(refused.retryAfterSeconds).toBeGreaterThan(800);
    expect(await throttle.overBudget('192.0.2.1')).toBeGreaterThan(800_000);
    // Another address, and another /64 of IPv6, still has its budget; the same /64 does not.
    expect(await throttle.overBudget('192.0.2.2')).toBeNull();
    for (let i = 0; i < 5; i++) await codeOf(throttle.refuse(`2001:db8:0:1::${i + 1}`, failure()));
    expect(await throttle.overBudget('2001:db8:0:1::ffff')).not.toBeNull();
    expect(await throttle.overBudget('2001:db8:0:2::1')).toBeNull();
    expect(await throttle.overBudget('::ffff:192.0.2.1')).not.toBeNull();
  });
});
