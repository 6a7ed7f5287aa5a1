import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { AuthThrottle } from '../../src/core/access/auth-throttle.js';
import { AppError } from '../../src/core/base/errors.js';
import { REDIS_TEST_URL } from '../support/harness.js';

// The credential-failure budget shared by two replicas through the real Redis, and the bound of
// the per-process "clean address" memory that spares a Redis round trip per request.
const redis = [new Redis(REDIS_TEST_URL), new Redis(REDIS_TEST_URL)];
// Until a client is ready the throttle uses its per-process insurance budget: wait, so both
// replicas really share Redis.
beforeAll(() => Promise.all(redis.map((r) => r.ping())));
afterAll(() => redis.forEach((r) => r.disconnect()));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const freshAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

const fail = (t: AuthThrottle, address: string) =>
  t.refuse(address, new AppError('UNAUTHENTICATED')).catch((e: AppError) => e.code);

describe('AuthThrottle across replicas (Redis)', () => {
  it('sees an address over budget on one replica within the clean-memory TTL of failures counted on another', async () => {
    const [a, b] = redis.map((r) => new AuthThrottle(r, 3, undefined, 300));
    const address = freshAddress();
    expect(await a!.overBudget(address)).toBeNull(); // clean: remembered by A for 300 ms
    expect(await Promise.all([1, 2, 3].map(() => fail(b!, address)))).toEqual(Array(3).fill('UNAUTHENTICATED'));
    expect(await fail(b!, address)).toBe('AUTH_THROTTLED');
    expect(await b!.overBudget(address)).toBeGreaterThan(0);
    expect(await a!.overBudget(address)).toBeNull(); // still within A's 300 ms
    await sleep(350);
    expect(await a!.overBudget(address)).toBeGreaterThan(0);
    // The shared budget: A's next failure is past it too.
    expect(await fail(a!, address)).toBe('AUTH_THROTTLED');
  });

  it('forgets a clean address at once when this replica counts a failure for it', async () => {
    const a = new AuthThrottle(redis[0]!, 2, undefined, 60_000);
    const address = freshAddress();
    expect(await a.overBudget(address)).toBeNull();
    await fail(a, address);
    await fail(a, address);
    expect(await a.overBudget(address)).toBeGreaterThan(0);
  });
});
