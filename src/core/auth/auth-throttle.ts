import { isIPv4, isIPv6 } from 'node:net';
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';

/** The fixed window of the failure budget. */
export const AUTH_FAILURE_WINDOW_SECONDS = 900;

/**
 * Failed credentials per client address, one budget for every channel (docs/api.md, "Brute force
 * and revocation"): a presented bearer token that is malformed, unknown, disabled or expired
 * (HTTP, MCP, Socket.IO, via TokenService.authenticate), a refused SMTP AUTH and a failed password
 * login each cost one point of AUTH_FAILURES_PER_15M in a fixed 15-minute window. Past the limit
 * the address is refused (429 / 454 4.7.0, RFC 6585 §4 / RFC 4954 §6) before any credential is
 * looked at, so guessing costs the attacker the window and us no query; other addresses are
 * served as usual.
 *
 * With Redis the budget is shared by every replica. When Redis is not ready the check falls back
 * to a per-process memory budget at once (insurance limiter) instead of failing or stalling every
 * authentication of the service.
 */
export class AuthThrottle {
  private readonly limiter: RateLimiterAbstract;

  /**
   * Addresses last seen with no failures, until when (epoch ms). Every authenticated request asks
   * assertAllowed; with Redis that was a round trip each time. A clean address is believed clean
   * for `cleanTtlMs` (the auth cache's AUTH_CACHE_TTL), so failures counted on another replica
   * reach this one within that time, as a disabled token does. A failure here forgets it at once.
   */
  private readonly clean = new Map<string, number>();

  constructor(redis: Redis | null, readonly failuresPer15m: number, private readonly log?: Logger, private readonly cleanTtlMs = 0) {
    const opts = { keyPrefix: `rl:auth-failures:${failuresPer15m}`, points: failuresPer15m, duration: AUTH_FAILURE_WINDOW_SECONDS };
    this.limiter = redis
      ? new RateLimiterRedis({ ...opts, storeClient: redis, useRedisPackage: false, rejectIfRedisNotReady: true, insuranceLimiter: new RateLimiterMemory(opts) })
      : new RateLimiterMemory(opts);
  }

  /** Throws AUTH_THROTTLED (with Retry-After seconds) when the address has used its budget. */
  async assertAllowed(clientAddress: string): Promise<void> {
    const key = clientKey(clientAddress);
    if ((this.clean.get(key) ?? 0) > Date.now()) return;
    const res = await this.limiter.get(key);
    if (res && res.consumedPoints >= this.failuresPer15m) throw throttled(res.msBeforeNext);
    if (this.cleanTtlMs > 0 && !res?.consumedPoints) {
      if (this.clean.size >= 10_000) this.clean.clear(); // bounded: a flood of addresses only costs lookups
      this.clean.set(key, Date.now() + this.cleanTtlMs);
    }
  }

  /** Lookups running now per address, in this process (the bound below). */
  private readonly inFlight = new Map<string, number>();

  /**
   * Runs one credential check that costs a query (a token lookup, a password hash) for the
   * address; a failure (`isFailure`) costs a point, anything else costs nothing. Only failures
   * spend the budget, so any number of concurrent good checks from one address (a NAT, a
   * reconnect storm) is never refused. Once an address has failed at all, its checks in flight
   * count against what is left of the budget too: an attacker with a thousand parallel
   * connections gets about the budget's answers, not one per connection.
   */
  async attempt<T>(clientAddress: string, check: () => Promise<T>, isFailure: (err: unknown) => boolean = isCredentialFailure): Promise<T> {
    const key = clientKey(clientAddress);
    const res = await this.limiter.get(key);
    const failures = res?.consumedPoints ?? 0;
    const running = this.inFlight.get(key) ?? 0;
    if (res && failures > 0 && failures + running >= this.failuresPer15m) throw throttled(res.msBeforeNext);
    this.inFlight.set(key, running + 1);
    try {
      return await check();
    } catch (err) {
      if (isFailure(err)) await this.recordFailure(clientAddress).catch((e: unknown) => this.log?.warn('auth.throttle_unavailable', { message: (e as Error).message }));
      throw err;
    } finally {
      const left = (this.inFlight.get(key) ?? 1) - 1;
      if (left > 0) this.inFlight.set(key, left);
      else this.inFlight.delete(key);
    }
  }

  /** Counts one failed credential that cost no query (a malformed SMTP username, a refused identity). */
  async recordFailure(clientAddress: string): Promise<void> {
    const key = clientKey(clientAddress);
    this.clean.delete(key);
    const res = await this.limiter.penalty(key, 1);
    this.crossed(key, res.consumedPoints, res.msBeforeNext);
  }

  private crossed(key: string, consumed: number, msBeforeNext: number): void {
    if (consumed === this.failuresPer15m) this.log?.warn('auth.throttled', { clientAddress: key, failures: consumed, retryAfterSeconds: Math.ceil(msBeforeNext / 1000) });
  }
}

const throttled = (msBeforeNext: number): AppError =>
  new AppError('AUTH_THROTTLED', undefined, { retryAfterSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)) });

/** A refused credential (401), as opposed to a throttle refusal or an outage. */
export const isCredentialFailure = (err: unknown): boolean => err instanceof AppError && (err.code === 'UNAUTHENTICATED' || err.code === 'LOGIN_FAILED');

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
  return `${full.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}
