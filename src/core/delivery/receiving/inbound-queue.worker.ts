import type { Database } from '../../../storage/database.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { Clock } from '../../time.js';
import { retryDelayMs, type RetryPolicy } from '../outbound/retry.js';
import { PollingLoop } from '../../housekeeping/polling-loop.js';
import { observability } from '../../observability.js';
import type { ReceivingService } from './receiving.service.js';
import {
  claimInbound,
  dropUndeliverable,
  failInbound,
  postponeInbound,
  QueueClaimLost,
  withoutDeletedMailboxes,
  type QueuedInbound,
} from './inbound-queue.store.js';

export interface InboundQueueWorkerOptions {
  workerId: string;
  /** How often an idle worker looks at the queue (a queue filled by another process). */
  pollIntervalMs: number;
  leaseMs: number;
  /** Rows claimed at once; their commits share transactions (the intake's CommitGroup). */
  batch: number;
  retry: RetryPolicy;
  /** Attempts before a message that keeps failing is set aside as `failed`. */
  maxAttempts: number;
}

/**
 * Delivers what queued intake accepted (docs/api.md, "Queued intake"): claims due rows of the
 * inbound queue and stores each in its mailboxes (ReceivingService.deliverQueued), which deletes
 * the row in the same commit. It wakes at once when this process queues a message and polls for
 * rows queued by other processes. Safe with any number of workers (SKIP LOCKED, leases).
 *
 * A refusal found only now (an AppError: the quota's excess over the reservation, a domain that
 * became hosted meanwhile) cannot be answered over SMTP any more: the row is kept as `failed`
 * with its reason (smtp.inbound_failed), and its reservation given back. Anything else (storage
 * down, a bug) is retried with backoff, then set aside the same way after `maxAttempts`.
 */
export class InboundQueueWorker {
  private readonly loop: PollingLoop;

  constructor(
    private readonly db: Database,
    private readonly receiving: ReceivingService,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: InboundQueueWorkerOptions,
  ) {
    this.loop = new PollingLoop(async () => (await this.runOnce()) > 0, {
      intervalMs: options.pollIntervalMs,
      onError: (err) => log.warn('inbound_queue.poll_failed', { workerId: options.workerId, err }),
      wakeOn: (kick) => receiving.whenQueued(kick),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops claiming and waits for the deliveries in flight. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Claims and delivers one batch; the number of rows claimed. */
  async runOnce(): Promise<number> {
    const claimed = await claimInbound(
      this.db,
      this.options.workerId,
      this.options.batch,
      this.options.leaseMs,
      this.clock.now(),
    );
    await Promise.all(claimed.map((q) => this.deliver(q)));
    return claimed.length;
  }

  private async deliver(q: QueuedInbound): Promise<void> {
    try {
      const copies = await this.deliverToLiveMailboxes(q);
      if (copies) observability().deliveryOutcome('inbound', 'delivered', copies);
    } catch (err) {
      if (err instanceof QueueClaimLost) return; // another worker took it over after our lease ran out
      await this.recordFailure(q, err).catch((recordErr: unknown) =>
        // The lease runs out and the row is claimed again: nothing is lost.
        this.log.warn('inbound_queue.record_failed', { queueId: q.id, err: recordErr }),
      );
    }
  }

  /**
   * A mailbox deleted while the message waited fails the insert of its copy: on such a failure the
   * other recipients get theirs (the deleted one's copy has nowhere to go, as if deleted just after).
   */
  private async deliverToLiveMailboxes(q: QueuedInbound): Promise<number> {
    try {
      return (await this.receiving.deliverQueued(q)).messageIds.length;
    } catch (err) {
      if (err instanceof AppError || err instanceof QueueClaimLost || isStorageUnavailable(err)) throw err;
      const live = await withoutDeletedMailboxes(this.db, q);
      if (live === q) throw err;
      if (live.envelope.recipients.length === 0) {
        await dropUndeliverable(this.db, q);
        this.log.info('smtp.inbound_dropped', { queueId: q.id, reason: 'every recipient mailbox was deleted' });
        return 0;
      }
      return (await this.receiving.deliverQueued(live)).messageIds.length;
    }
  }

  private async recordFailure(q: QueuedInbound, err: unknown): Promise<void> {
    const reason = err instanceof AppError ? `${err.code}: ${err.message}` : String((err as Error)?.message ?? err);
    if (err instanceof AppError || (!isStorageUnavailable(err) && q.attempts >= this.options.maxAttempts)) {
      await failInbound(this.db, q, reason);
      observability().deliveryOutcome('inbound', 'failed');
      this.log.error('smtp.inbound_failed', { queueId: q.id, attempts: q.attempts, reason });
      return;
    }
    const runAfter = new Date(this.clock.now().getTime() + retryDelayMs(q.attempts, this.options.retry));
    await postponeInbound(this.db, q, runAfter, reason);
    observability().deliveryOutcome('inbound', 'deferred');
    this.log.warn('smtp.inbound_retry', { queueId: q.id, attempts: q.attempts, runAfter, err });
  }
}
