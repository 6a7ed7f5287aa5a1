import type { Database } from '../../../storage/database.js';
import type { Clock } from '../../base/time.js';
import { webhooksWant } from '../../state/events/event-log.store.js';

/** How long an answer stands; a webhook created meanwhile waits at most this long plus a poll. */
export const WEBHOOK_WAKE_TTL_MS = 2_000;
/** Answers (mailbox and event type) remembered at once; past this the memory starts over. */
const MAX_MAILBOXES = 10_000;

/**
 * Which announced events are worth waking the webhook worker for: those some webhook wants (the
 * event log's own fan-out rule, webhooksWant), asked of the database once per mailbox and event
 * type every WEBHOOK_WAKE_TTL_MS. Waking on every event would have every loop of every worker
 * process claim (under the one claim lock of all replicas) for each message, webhooks or not. A
 * stale "no" delays a delivery by at most the TTL and a poll: the poll finds every due delivery
 * whatever woke it.
 */
export class WebhookWake {
  private readonly known = new Map<string, { wanted: Promise<boolean>; at: number }>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly ttlMs = WEBHOOK_WAKE_TTL_MS,
  ) {}

  wanted(mailboxId: string, type: string): Promise<boolean> {
    const key = `${mailboxId} ${type}`;
    const now = this.clock.now().getTime();
    const hit = this.known.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.wanted;
    if (this.known.size >= MAX_MAILBOXES) this.known.clear();
    // A failed read wakes the worker: a claim too many is harmless, a missed one costs a poll.
    const wanted = webhooksWant(this.db, mailboxId, type).catch(() => true);
    this.known.set(key, { wanted, at: now });
    return wanted;
  }
}
