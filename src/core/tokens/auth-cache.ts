import type { Principal } from '../auth/principal.js';

/**
 * Verified principals by token hash, for a short TTL (AUTH_CACHE_TTL, default 500 ms). Under
 * load the same token authenticates many requests a second; this turns those lookups into one
 * query per TTL. A token disabled or deleted in this process is dropped at once; on other
 * replicas it is refused within the TTL. Expiry is re-checked on every hit, so the cache never
 * extends a token's life.
 */
export class AuthCache {
  private readonly entries = new Map<string, { principal: Principal; storedAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(hash: string): Principal | undefined {
    if (this.ttlMs <= 0) return undefined;
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (performance.now() - entry.storedAt > this.ttlMs) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.principal;
  }

  set(hash: string, principal: Principal): void {
    if (this.ttlMs <= 0) return;
    // Map keeps insertion order: dropping the first key evicts the oldest entry.
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(hash, { principal, storedAt: performance.now() });
  }

  forgetToken(tokenId: string): void {
    for (const [hash, entry] of this.entries) if (entry.principal.tokenId === tokenId) this.entries.delete(hash);
  }

  clear(): void {
    this.entries.clear();
  }
}
