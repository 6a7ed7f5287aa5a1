import { LRUCache } from 'lru-cache';
import type { Principal } from './principal.js';

/**
 * Verified principals by token hash, for a short TTL (AUTH_CACHE_TTL, default 500 ms). Under
 * load the same token authenticates many requests a second; this turns those lookups into one
 * query per TTL. A token disabled or deleted in this process is dropped at once; on other
 * replicas it is refused within the TTL. Expiry is re-checked on every hit, so the cache never
 * extends a token's life. A hit does not renew the entry's age (lru-cache's default), so a busy
 * token is still looked up once per TTL.
 */
export class AuthCache {
  private readonly entries: LRUCache<string, Principal> | null;

  constructor(ttlMs: number, maxEntries = 10_000) {
    this.entries = ttlMs > 0 ? new LRUCache({ max: maxEntries, ttl: ttlMs }) : null;
  }

  get(hash: string): Principal | undefined {
    return this.entries?.get(hash);
  }

  set(hash: string, principal: Principal): void {
    this.entries?.set(hash, principal);
  }

  forgetToken(tokenId: string): void {
    if (!this.entries) return;
    for (const [hash, principal] of this.entries.entries())
      if (principal.tokenId === tokenId) this.entries.delete(hash);
  }

  clear(): void {
    this.entries?.clear();
  }
}
