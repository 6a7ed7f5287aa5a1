import { isIPv4, isIPv6 } from 'node:net';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { AppError } from '../base/errors.js';
import type { Logger } from '../base/logger.js';
import { createLimiter, retryAfterSeconds } from '../base/ratelimit/limiter.js';

/** The fixed window of the failure budget. */
export const AUTH_FAILURE_WINDOW_SECONDS = 900;

/**
 * Failed credentials per client address, one budget for every channel (docs/api.md,
 * "Authentication throttling"). A presented credential that fails (a malformed, unknown, disabled
 * or expired token on HTTP, MCP or Socket.IO, a refused SMTP AUTH, a wrong password) costs its
 * address one point of AUTH_FAILURES_PER_15M in a fixed 15-minute window. Within the budget the
 * failure is answered as it is (401 / 535); past it, AUTH_THROTTLED (429 / 454 4.7.0, RFC 6585 §4,
 * RFC 4954 §6).
 *
 * Only failures are refused: a valid credential is never refused because of the address it comes
 * from (docs/contract.md, "Authentication under shared addresses"), so one stale agent behind a NAT
 * cannot lock out everyone behind it. What keeps an attacker's cost bounded is elsewhere: the
 * token lookups an address can cause go through one lane per address (TokenLookupLanes), and
 * password hashes through the hash gate (PasswordHashGate).
 *
 * With Redis the budget is shared by every replica; when Redis is not ready a per-process memory
 * budget takes over at once (insurance limiter) instead of failing every authentication.
 */
export class AuthThrottle {
  private readonly limiter: RateLimiterAbstract;

  /**
   * Addresses last seen with no failures, until when (epoch ms): spares the Redis round trip of
   * `overBudget` for clean addresses. Believed for `cleanTtlMs`, so failures counted on another
   * replica reach this one within that time. A failure here forgets the entry at once.
   */
  private readonly clean = new Map<string, number>();

  constructor(
    redis: Redis | null,
    readonly failuresPer15m: number,
    private readonly log?: Logger,
    private readonly cleanTtlMs = 0,
  ) {
    this.limiter = createLimiter(redis, {
      keyPrefix: `rl:auth-failures:${failuresPer15m}`,
      points: failuresPer15m,
      duration: AUTH_FAILURE_WINDOW_SECONDS,
    });
  }

  /** Whether the address has used its failure budget: the ms until the window ends, or null. */
  async overBudget(clientAddress: string): Promise<number | null> {
    const key = clientKey(clientAddress);
    if ((this.clean.get(key) ?? 0) > Date.now()) return null;
    const res = await this.limiter.get(key);
    if (res && res.consumedPoints >= this.failuresPer15m) return res.msBeforeNext;
    if (this.cleanTtlMs > 0 && !res?.consumedPoints) {
      if (this.clean.size >= 10_000) this.clean.clear(); // bounded: a flood of addresses only costs lookups
      this.clean.set(key, Date.now() + this.cleanTtlMs);
    }
    return null;
  }

  /**
   * Counts one failed credential of the address and throws what to answer: `failure` itself
   * while the budget lasts, AUTH_THROTTLED with Retry-After past it. The count is one atomic
   * increment, so concurrent failures get exactly the budget's answers. A limiter outage answers
   * the failure (never a 500 for a wrong credential).
   */
  async refuse(clientAddress: string, failure: AppError): Promise<never> {
    const key = clientKey(clientAddress);
    this.clean.delete(key);
    const res = await this.limiter.penalty(key, 1).catch((e: unknown) => {
      this.log?.warn('auth.throttle_unavailable', { message: (e as Error).message });
      return null;
    });
    if (res && res.consumedPoints === this.failuresPer15m)
      this.log?.warn('auth.throttled', {
        clientAddress: key,
        failures: res.consumedPoints,
        retryAfterSeconds: Math.ceil(res.msBeforeNext / 1000),
      });
    if (res && res.consumedPoints > this.failuresPer15m) throw throttled(res.msBeforeNext);
    throw failure;
  }
}

export const throttled = (msBeforeNext: number): AppError =>
  new AppError('AUTH_THROTTLED', undefined, { retryAfterSeconds: retryAfterSeconds(msBeforeNext) });

/** A refused credential (401), as opposed to a throttle refusal or an outage. */
export const isCredentialFailure = (err: unknown): err is AppError =>
  err instanceof AppError && (err.code === 'UNAUTHENTICATED' || err.code === 'LOGIN_FAILED');

/**
 * The key a client address is counted under: an IPv4-mapped IPv6 address as IPv4 (SMTP and HTTP
 * may see either form of one client), an IPv6 address as its /64, which is what one subscriber
 * gets (RFC 6177); counting single IPv6 addresses would hand an attacker 2^64 budgets.
 */
export function clientKey(address: string): string {
  const bare = address.split('%')[0]!.toLowerCase();
  if (bare.startsWith('::ffff:') && isIPv4(bare.slice(7))) return bare.slice(7);
  if (!isIPv6(bare)) return bare;
  const [head = '', tail] = bare.split('::');
  const groups = (s: string) => (s ? s.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const full = [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  return `${full
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
