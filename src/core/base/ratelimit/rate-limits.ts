import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { AppError } from '../errors.js';
import { createLimiter, retryAfterSeconds } from './limiter.js';

/**
 * Fixed-window limiters keyed by mailbox or address, in memory for one process or in Redis so
 * every replica and channel (HTTP, MCP, SMTP) shares one budget per mailbox.
 */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(
    private readonly redis: Redis | null,
    private readonly options: { sendPerMinute: number; loginFailuresPer15m: number },
  ) {}

  private limiter(name: string, points: number, durationSec: number): RateLimiterAbstract {
    const key = `${name}:${points}:${durationSec}`;
    let limiter = this.limiters.get(key);
    if (!limiter) {
      limiter = createLimiter(this.redis, {
        keyPrefix: `rl:${name}:${points}:${durationSec}`,
        points,
        duration: durationSec,
      });
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

  /**
   * Throws 429 when this client address already had LOGIN_FAILURES_PER_15M failed logins for this
   * mailbox address: the budget is per (account, client address), so failures from one address
   * never refuse the account's owner elsewhere (docs/contract.md, "Authentication under shared addresses").
   */
  async assertLoginAllowed(address: string, clientKey: string): Promise<void> {
    const res = await this.limiter('login', this.options.loginFailuresPer15m, 900).get(`${address}|${clientKey}`);
    if (res && res.remainingPoints <= 0)
      throw new AppError('LOGIN_THROTTLED', undefined, { retryAfterSeconds: retryAfterSeconds(res.msBeforeNext) });
  }

  /** Failed logins of the account from every address in the current window (the slowdown's input). */
  async accountLoginFailures(address: string): Promise<number> {
    const res = await this.limiter('login-account', ACCOUNT_COUNT_POINTS, 900).get(address);
    return res?.consumedPoints ?? 0;
  }

  async recordLoginFailure(address: string, clientKey: string): Promise<void> {
    await Promise.all([
      this.limiter('login', this.options.loginFailuresPer15m, 900).penalty(`${address}|${clientKey}`, 1),
      this.limiter('login-account', ACCOUNT_COUNT_POINTS, 900).penalty(address, 1),
    ]);
  }
}

/** The per-account counter only counts (it never refuses): a budget nobody reaches. */
const ACCOUNT_COUNT_POINTS = 1_000_000_000;

function asRateLimited(err: unknown, code: 'RATE_LIMITED' | 'LOGIN_THROTTLED'): Error {
  if (err instanceof RateLimiterRes) {
    return new AppError(code, undefined, { retryAfterSeconds: retryAfterSeconds(err.msBeforeNext) });
  }
  return err as Error;
}
