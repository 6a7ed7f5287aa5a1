import { AppError } from '../base/errors.js';
import { clientKey } from './auth-throttle.js';

/**
 * Caps concurrent password hashes (scrypt, ~32 MiB and tens of ms each on the libuv thread pool)
 * per client address and overall, so a login flood cannot occupy the pool that file and crypto
 * work share (docs/api.md, "Authentication throttling"). A check waits its turn in a short queue;
 * past `maxQueuedPerAddress` waiting checks of one address, or `maxQueued` in all, it is refused
 * at once with LOGIN_BUSY (429, Retry-After 1) without hashing.
 */
export class PasswordHashGate {
  private running = 0;
  private readonly perAddress = new Map<string, { running: number; queued: number }>();
  private readonly queue: { key: string; start: () => void }[] = [];
  /** Most hashes seen running at once (reliability figures). */
  peak = 0;

  constructor(
    private readonly options: {
      concurrency: number;
      concurrencyPerAddress: number;
      maxQueuedPerAddress: number;
      maxQueued: number;
    },
  ) {}

  async run<T>(clientAddress: string | null, hash: () => Promise<T>): Promise<T> {
    const key = clientAddress ? clientKey(clientAddress) : '';
    const slot = this.perAddress.get(key) ?? { running: 0, queued: 0 };
    this.perAddress.set(key, slot);
    if (!this.canStart(slot)) {
      if (slot.queued >= this.options.maxQueuedPerAddress || this.queue.length >= this.options.maxQueued) {
        this.release(key, slot, false);
        throw new AppError('LOGIN_BUSY', undefined, { retryAfterSeconds: 1 });
      }
      slot.queued++;
      // The slot is taken for us (running counted) before start() is called: see release.
      await new Promise<void>((resolve) => this.queue.push({ key, start: resolve }));
      slot.queued--;
    } else {
      slot.running++;
      this.running++;
    }
    this.peak = Math.max(this.peak, this.running);
    try {
      return await hash();
    } finally {
      slot.running--;
      this.running--;
      this.release(key, slot, true);
    }
  }

  private canStart(slot: { running: number }): boolean {
    return this.running < this.options.concurrency && slot.running < this.options.concurrencyPerAddress;
  }

  /** Starts the first queued checks that may run now (another address may go ahead of a capped one). */
  private release(key: string, slot: { running: number; queued: number }, finished: boolean): void {
    if (finished) {
      for (let i = 0; i < this.queue.length && this.running < this.options.concurrency; i++) {
        const next = this.queue[i]!;
        const s = this.perAddress.get(next.key)!;
        if (s.running >= this.options.concurrencyPerAddress) continue;
        this.queue.splice(i--, 1);
        // Counted now, so the next iteration sees the slot taken before the waiter resumes.
        s.running++;
        this.running++;
        next.start();
      }
    }
    if (slot.running === 0 && slot.queued === 0) this.perAddress.delete(key);
  }
}
