import type { Database } from '../../storage/database.js';
import { recordTokenUses } from './token.store.js';

/**
 * Remembers each token's last use in memory and writes them in one statement per interval,
 * so authenticating a request never costs a write (lastUsedAtTs is at most one interval stale).
 */
export class UsageRecorder {
  private pending = new Map<string, { at: Date; ip: string | null }>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly intervalMs = 5000,
  ) {}

  record(tokenId: string, ip: string | null, at = new Date()): void {
    this.pending.set(tokenId, { at, ip });
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush().catch(() => undefined), this.intervalMs);
    this.timer.unref();
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending];
    this.pending = new Map();
    await recordTokenUses(
      this.db,
      batch.map(([id, u]) => ({ id, at: u.at, ip: u.ip })),
    );
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
