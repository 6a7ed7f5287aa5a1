import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { AppError } from '../errors.js';

/**
 * Fixed-window limiters keyed by mailbox or address, in memory for one process or in Redis so
 * every replica and channel (HTTP, MCP, SMTP) shares one budget per mailbox.
 */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(private readonly redis: Redis | null, private readonly options: { sendPerMinute: number; loginFailuresPer15m: number }) {}

  private limiter(name: string, points: number, durationSec: number): RateLimiterAbstract {
    const key = `${name}:${points}:${durationSec}`;
    let limiter = this.limiters.get(key);
    if (!limiter) {
      const opts = { keyPrefix: `rl:${name}:${points}:${durationSec}`, points, duration: durationSec };
      // Redis unreachable (or not ready yet): this process enforces the same limit alone, in
      // memory, at once, instead of failing the send or waiting for ioredis to reconnect.
      limiter = this.redis
        ? new RateLimiterRedis({ ...opts, storeClient: this.redis, useRedisPackage: false, rejectIfRedisNotReady: true, insuranceLimiter: new RateLimiterMemory(opts) })
        : new RateLimiterMemory(opts);
      this.limiters.set(key, limiter);
    }
    return limiter;
  }

  /** Spends one send for the mailbox, or throws 429 with whole-second Retry-After. */
  async consumeSend(mailboxId: string, perMinute: number | null): Promise<void> {
    try {
      await this.limiter('send', perMinute ?? this.options.sendPerMinute, 60).consume(mailboxId, 1);
    } catch (err) {
      throw asRateLimited(err, 'RATE_LIMITED');
    }
  }

  /** Throws 429 when the address already had too many failed logins. */
  async assertLoginAllowed(address: string): Promise<void> {
    const res = await this.limiter('login', this.options.loginFailuresPer15m, 900).get(address);
    if (res && res.remainingPoints <= 0) throw new AppError('LOGIN_THROTTLED', undefined, { retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) });
  }

  async recordLoginFailure(address: string): Promise<void> {
    await this.limiter('login', this.options.loginFailuresPer15m, 900).penalty(address, 1);
  }
}

function asRateLimited(err: unknown, code: 'RATE_LIMITED' | 'LOGIN_THROTTLED'): Error {
  if (err instanceof RateLimiterRes) {
    return new AppError(code, undefined, { retryAfterSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) });
  }
  return err as Error;
}
