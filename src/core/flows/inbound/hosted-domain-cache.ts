import type { Database } from '../../../storage/database.js';
import type { Clock } from '../../base/time.js';
import { hostedDomains } from './hosted-dkim.js';

/**
 * Which domains are hosted here, remembered for `ttlMs`: queued intake asks it of every From
 * domain to choose its path (a hosted From is verified before the 250). Only that choice may be
 * stale: the delivery behind the 250 asks the database again, so mail from a domain hosted
 * within the last `ttlMs` that lacks our signature is set aside there (never stored) instead
 * of refused over SMTP.
 */
export class HostedDomainCache {
  private readonly known = new Map<string, { hosted: boolean; until: number }>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly ttlMs = 2_000,
    private readonly maxEntries = 10_000,
  ) {}

  /** The hosted domains among `domains` (lower-case). */
  async hostedAmong(domains: readonly string[]): Promise<string[]> {
    const now = this.clock.now().getTime();
    const unknown = domains.filter((d) => !((this.known.get(d)?.until ?? 0) > now));
    if (unknown.length) {
      const hosted = new Set(await hostedDomains(this.db, unknown));
      if (this.known.size + unknown.length > this.maxEntries) this.known.clear();
      for (const d of unknown) this.known.set(d, { hosted: hosted.has(d), until: now + this.ttlMs });
    }
    return domains.filter((d) => this.known.get(d)?.hosted);
  }
}
