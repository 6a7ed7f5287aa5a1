/**
 * What this process recently learned about token hashes (docs/api.md, "Authentication
 * throttling"):
 * - valid: hashes that authenticated, until their expiry (at most a day). They skip the per-address
 *   lookup lane, so a good token is answered at normal speed whatever its address did. A hit is
 *   still verified (AuthCache, else the database): this only decides the path, never the outcome.
 * - unknown: hashes no token has. A token's secret is random, so an unknown hash never becomes
 *   valid; repeating one (a stale agent, a replayed guess) costs no query for `unknownTtlMs`.
 * Both are bounded (oldest first out), so a flood of distinct hashes costs memory once, not growth.
 */
export class TokenVerdicts {
  private readonly valid = new Map<string, number>();
  private readonly unknown = new Map<string, number>();

  constructor(
    private readonly options: { maxEntries: number; validTtlMs: number; unknownTtlMs: number } = {
      maxEntries: 100_000,
      validTtlMs: 86_400_000,
      unknownTtlMs: 900_000,
    },
  ) {}

  isValid(hash: string): boolean {
    return live(this.valid, hash);
  }

  isUnknown(hash: string): boolean {
    return live(this.unknown, hash);
  }

  rememberValid(hash: string, expiresAt: Date | null): void {
    const until = Math.min(Date.now() + this.options.validTtlMs, expiresAt?.getTime() ?? Infinity);
    put(this.valid, hash, until, this.options.maxEntries);
  }

  rememberUnknown(hash: string): void {
    put(this.unknown, hash, Date.now() + this.options.unknownTtlMs, this.options.maxEntries);
  }

  forget(hash: string): void {
    this.valid.delete(hash);
  }

  clear(): void {
    this.valid.clear();
  }
}

function live(map: Map<string, number>, key: string): boolean {
  const until = map.get(key);
  if (until === undefined) return false;
  if (until > Date.now()) return true;
  map.delete(key);
  return false;
}

function put(map: Map<string, number>, key: string, until: number, max: number): void {
  map.delete(key);
  // Map keeps insertion order: the first key is the oldest.
  if (map.size >= max) map.delete(map.keys().next().value!);
  map.set(key, until);
}
