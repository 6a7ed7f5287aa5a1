import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { createLimiter } from '../../src/core/base/ratelimit/limiter.js';
import { REDIS_TEST_URL } from '../support/harness.js';

// One limiter rule for the send rate, login failures and the credential-failure budget: shared
// through Redis when it is there, and enforced in memory at once while it is not.

const shared = new Redis(REDIS_TEST_URL);
// A Redis nobody listens on: never ready.
const down = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
down.on('error', () => undefined);
afterAll(() => {
  shared.disconnect();
  down.disconnect();
});

describe('createLimiter', () => {
  it('shares one budget between processes through Redis', async () => {
    await shared.ping();
    const opts = { keyPrefix: `rl:test:${randomBytes(4).toString('hex')}`, points: 2, duration: 60 };
    const [a, b] = [createLimiter(shared, opts), createLimiter(shared, opts)];
    await a.consume('k');
    await b.consume('k');
    await expect(a.consume('k')).rejects.toMatchObject({ remainingPoints: 0 });
  });

  it('falls back to this process memory at once while Redis is not ready, with the same limit', async () => {
    const limiter = createLimiter(down, { keyPrefix: 'rl:test:down', points: 2, duration: 60 });
    const started = Date.now();
    await limiter.consume('k');
    await limiter.consume('k');
    await expect(limiter.consume('k')).rejects.toMatchObject({ remainingPoints: 0 });
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
