import type { Database } from '../../../storage/database.js';
import type { EventBus } from '../../../storage/event-bus.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { appendEvent } from '../events/event-log.js';
import type { Logger } from '../../base/logger.js';
import { PollingLoop } from '../../base/loops/polling-loop.js';
import type { Clock } from '../../base/time.js';
import { claimFollowUp, dueFollowUps, toThreadSummary } from './thread-state.store.js';

/** Threads looked at per statement; the sweep goes on while a batch comes back full. */
const BATCH = 200;

/**
 * Emits `thread.follow-up-due` once per follow-up (docs/workflow.md, "Follow-ups"): for every thread
 * still awaiting_reply whose followUpAt has passed. No timer per thread: the due threads are rows
 * under a partial index, found by a poll. Exactly once and durable: the claim (follow_up_notified_at)
 * and the event are written in one transaction, so a worker killed at any point has either done
 * both or neither, and a second worker's claim waits on the row lock and then finds it taken.
 */
export class FollowUps {
  constructor(
    private readonly db: Database,
    private readonly bus: EventBus,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** One sweep; returns how many events it emitted. */
  async emitDue(): Promise<number> {
    let emitted = 0;
    for (;;) {
      const now = this.clock.now();
      const due = await dueFollowUps(this.db, now, BATCH);
      for (const t of due) {
        const event = await this.claim(t.id, t.mailbox_id, now);
        if (!event) continue;
        emitted += 1;
        await this.bus.publish([event]).catch((err) => this.log.warn('events.publish_failed', { err }));
      }
      if (due.length < BATCH) return emitted;
    }
  }

  private claim(threadId: string, mailboxId: string, now: Date): Promise<MailboxEvent | null> {
    return this.db.tx(async (trx) => {
      const row = await claimFollowUp(trx, threadId, mailboxId, now);
      if (!row) return null;
      const { mailboxAddress: _omit, ...data } = toThreadSummary(row);
      return appendEvent(trx, mailboxId, 'thread.follow-up-due', data, now);
    });
  }
}

/** The worker's follow-up poll, every `intervalMs` (WORKER_POLL_INTERVAL): a follow-up fires within one interval. */
export function startFollowUps(followUps: FollowUps, log: Logger, intervalMs: number): { stop(): Promise<void> } {
  const loop = new PollingLoop(
    async () => {
      const emitted = await followUps.emitDue();
      if (emitted > 0) log.info('thread.follow_ups_emitted', { emitted });
      return false; // emitDue takes every due follow-up, batch after batch
    },
    { intervalMs, onError: (err) => log.warn('thread.follow_up_sweep_failed', { err }) },
  );
  loop.start();
  return { stop: () => loop.stop() };
}
