import { AppError, type ErrorCode } from '../errors.js';

/**
 * At most `max` things held at once per key (a token id), in this process: open Socket.IO
 * connections, long-polls (docs/api.md, "Per-token bounds"). One token cannot occupy what every
 * tenant shares; past the cap the next one is refused with `code` (429, Retry-After 1) instead of
 * queued. Per process: with N replicas a token may hold N × max.
 */
export class ConcurrencyCap {
  private readonly held = new Map<string, number>();

  constructor(
    readonly max: number,
    private readonly code: ErrorCode,
  ) {}

  /** Takes one slot of `key`, or throws; the returned release is idempotent. */
  acquire(key: string): () => void {
    const n = this.held.get(key) ?? 0;
    if (n >= this.max) throw new AppError(this.code, undefined, { retryAfterSeconds: 1 });
    this.held.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    };
  }

  inUse(key: string): number {
    return this.held.get(key) ?? 0;
  }
}
