import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { AppError } from '../errors.js';

/**
 * Failed SMTP AUTH attempts per client address in a fixed 15-minute window, shared by every
 * replica through Redis when configured. Past the limit AUTH answers 454 4.7.0 (RFC 4954 §6)
 * without checking credentials, so guessing tokens over SMTP gets nowhere fast.
 */
export class AuthThrottle {
  private readonly limiter: RateLimiterAbstract;

  constructor(redis: Redis | null, failuresPer15m: number) {
    const opts = { keyPrefix: `rl:smtp-auth:${failuresPer15m}`, points: failuresPer15m, duration: 900 };
    this.limiter = redis ? new RateLimiterRedis({ ...opts, storeClient: redis, useRedisPackage: false }) : new RateLimiterMemory(opts);
  }

  async assertAllowed(clientAddress: string): Promise<void> {
    const res = await this.limiter.get(clientAddress);
    if (res && res.remainingPoints <= 0) {
      throw new AppError('LOGIN_THROTTLED', 'Too many failed SMTP AUTH attempts from this address.', { retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) });
    }
  }

  async recordFailure(clientAddress: string): Promise<void> {
    await this.limiter.penalty(clientAddress, 1);
  }
}
