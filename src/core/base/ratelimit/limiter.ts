import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';

export interface LimiterOptions {
  keyPrefix: string;
  points: number;
  /** The fixed window, in seconds. */
  duration: number;
}

/**
 * A fixed-window limiter, one rule for every budget (send rate, login failures, credential
 * failures): in Redis when configured, so every replica and channel shares it, else in this
 * process's memory. While Redis is not ready (down, reconnecting) each process enforces the same
 * limit alone in memory at once (the insurance limiter) instead of failing or stalling the
 * request until ioredis reconnects.
 */
export function createLimiter(redis: Redis | null, opts: LimiterOptions): RateLimiterAbstract {
  if (!redis) return new RateLimiterMemory(opts);
  return new RateLimiterRedis({
    ...opts,
    storeClient: redis,
    useRedisPackage: false,
    rejectIfRedisNotReady: true,
    insuranceLimiter: new RateLimiterMemory(opts),
  });
}

/** Retry-After of a refusal: whole seconds, at least 1 (RFC 9110 §10.2.3). */
export const retryAfterSeconds = (msBeforeNext: number): number => Math.max(1, Math.ceil(msBeforeNext / 1000));
