import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { AuthThrottle } from '../../src/core/auth/auth-throttle.js';
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

describe('AuthThrottle across replicas (Redis)', () => {
  it('refuses an address on one replica within the clean-memory TTL of failures counted on another', async () => {
    const [a, b] = redis.map((r) => new AuthThrottle(r, 3, undefined, 300));
    const address = freshAddress();
    await a!.assertAllowed(address); // clean: remembered by A for 300 ms
    for (let i = 0; i < 3; i++) await b!.recordFailure(address);
    await expect(b!.assertAllowed(address)).rejects.toMatchObject({ code: 'AUTH_THROTTLED' });
    await expect(a!.assertAllowed(address)).resolves.toBeUndefined(); // still within A's 300 ms
    await sleep(350);
    await expect(a!.assertAllowed(address)).rejects.toMatchObject({ code: 'AUTH_THROTTLED' });
  });

  it('forgets a clean address at once when this replica counts a failure for it', async () => {
    const a = new AuthThrottle(redis[0]!, 2, undefined, 60_000);
    const address = freshAddress();
    await a.assertAllowed(address);
    await a.recordFailure(address);
    await a.recordFailure(address);
    await expect(a.assertAllowed(address)).rejects.toMatchObject({ code: 'AUTH_THROTTLED' });
  });
});
