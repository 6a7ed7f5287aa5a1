import type { Database } from '../../../storage/database.js';
import type { Clock } from '../../base/time.js';
import { mailboxHasWebhooks } from './webhook.store.js';

/** How long an answer stands; a webhook created meanwhile waits at most this long plus a poll. */
export const WEBHOOK_WAKE_TTL_MS = 2_000;
/** Mailboxes remembered at once; past this the memory starts over. */
const MAX_MAILBOXES = 10_000;

/**
 * Which announced events are worth waking the webhook worker for: those of a mailbox some webhook
 * listens to, asked of the database once per mailbox every WEBHOOK_WAKE_TTL_MS. Waking on every
 * event had every loop of every worker process claim (one global claim lock) for each message,
 * webhooks or not, which slowed intake itself under load. A stale "no" delays a delivery by at
 * most the TTL and a poll: the poll finds every due delivery whatever woke it.
 */
export class WebhookWake {
  private readonly known = new Map<string, { wanted: Promise<boolean>; at: number }>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly ttlMs = WEBHOOK_WAKE_TTL_MS,
  ) {}

  wanted(mailboxId: string): Promise<boolean> {
    const now = this.clock.now().getTime();
    const hit = this.known.get(mailboxId);
    if (hit && now - hit.at < this.ttlMs) return hit.wanted;
    if (this.known.size >= MAX_MAILBOXES) this.known.clear();
    // A failed read wakes the worker: a claim too many is harmless, a missed one costs a poll.
    const wanted = mailboxHasWebhooks(this.db, mailboxId).catch(() => true);
    this.known.set(mailboxId, { wanted, at: now });
    return wanted;
  }
}
