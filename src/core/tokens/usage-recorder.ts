import { sql, type Database } from '../../storage/database.js';

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
    const ids = batch.map(([id]) => id);
    const ats = batch.map(([, u]) => u.at.toISOString());
    const ips = batch.map(([, u]) => u.ip);
    await this.db.rows(sql`update access_token t set last_used_at = u.at, last_used_remote_ip = u.ip
      from unnest(${ids}::text[], ${ats}::timestamptz[], ${ips}::text[]) as u(id, at, ip)
      where t.id = u.id and (t.last_used_at is null or t.last_used_at < u.at)`);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
