import { isStorageUnavailable } from '../../../storage/errors.js';
import { AppError } from '../../base/errors.js';
import type { Logger } from '../../base/logger.js';
import type { Clock } from '../../base/time.js';
import { retryDelayMs, type RetryPolicy } from '../outbound/retry.js';
import { PollingLoop } from '../../base/loops/polling-loop.js';
import { observability } from '../../base/observability.js';
import type { Database, Sql } from '../../../storage/database.js';
import {
  failQueued,
  postponeQueued,
  QueueClaimLost,
  type ClaimedRow,
  type IntakeQueueTable,
} from './intake-queue.store.js';

/** One SMTP intake queue as its worker drives it (port 25's and port 587's). */
export interface IntakeQueue<Q extends ClaimedRow> {
  /** `inbound` (25) or `submission` (587): the metrics' route and the log events' names. */
  readonly route: 'inbound' | 'submission';
  readonly table: IntakeQueueTable;
  claim(lockedBy: string, limit: number, leaseMs: number, now: Date): Promise<Q[]>;
  /** Stores `q`'s message, deleting its row in the same commit; how many copies were stored. */
  store(q: Q): Promise<number>;
  /** Gives back the quota `q` reserved at intake, in the transaction that sets it aside. */
  release(trx: Sql, q: Q): Promise<void>;
  /** `kick` is called after each commit of a row queued by this process. */
  whenQueued(kick: () => void): () => void;
}

export interface IntakeQueueWorkerOptions {
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
 * Stores what queued intake accepted (docs/api.md, "Queued intake"): claims due rows of one queue
 * and stores each, the row deleted in the same commit. It wakes at once when this process queues
 * a message and polls for rows queued by other processes. Safe with any number of workers (SKIP
 * LOCKED, leases).
 *
 * A refusal found only now (an AppError: the quota's excess over the reservation, say) cannot be
 * answered over SMTP any more: the row is kept as `failed` with its reason (smtp.<route>_failed)
 * and its reservation given back. Anything else (storage down, a bug) is retried with backoff,
 * then set aside the same way after `maxAttempts`.
 */
export class IntakeQueueWorker<Q extends ClaimedRow> {
  private readonly loop: PollingLoop;

  constructor(
    private readonly db: Database,
    private readonly queue: IntakeQueue<Q>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: IntakeQueueWorkerOptions,
  ) {
    this.loop = new PollingLoop(async () => (await this.runOnce()) > 0, {
      intervalMs: options.pollIntervalMs,
      onError: (err) => log.warn(`${queue.route}_queue.poll_failed`, { workerId: options.workerId, err }),
      wakeOn: (kick) => queue.whenQueued(kick),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops claiming and waits for the messages in flight. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Claims and stores one batch; the number of rows claimed. */
  async runOnce(): Promise<number> {
    const { workerId, batch, leaseMs } = this.options;
    const claimed = await this.queue.claim(workerId, batch, leaseMs, this.clock.now());
    await Promise.all(claimed.map((q) => this.store(q)));
    return claimed.length;
  }

  private async store(q: Q): Promise<void> {
    try {
      const copies = await this.queue.store(q);
      if (copies) observability().deliveryOutcome(this.queue.route, 'delivered', copies);
    } catch (err) {
      if (err instanceof QueueClaimLost) return; // another worker took it over after our lease ran out
      await this.recordFailure(q, err).catch((recordErr: unknown) =>
        // The lease runs out and the row is claimed again: nothing is lost.
        this.log.warn(`${this.queue.route}_queue.record_failed`, { queueId: q.id, err: recordErr }),
      );
    }
  }

  private async recordFailure(q: Q, err: unknown): Promise<void> {
    const route = this.queue.route;
    const reason = err instanceof AppError ? `${err.code}: ${err.message}` : String((err as Error)?.message ?? err);
    if (err instanceof AppError || (!isStorageUnavailable(err) && q.attempts >= this.options.maxAttempts)) {
      await failQueued(this.db, this.queue.table, q, reason, (trx) => this.queue.release(trx, q));
      observability().deliveryOutcome(route, 'failed');
      this.log.error(`smtp.${route}_failed`, { queueId: q.id, attempts: q.attempts, reason });
      return;
    }
    const runAfter = new Date(this.clock.now().getTime() + retryDelayMs(q.attempts, this.options.retry));
    await postponeQueued(this.db, this.queue.table, q, runAfter, reason);
    observability().deliveryOutcome(route, 'deferred');
    this.log.warn(`smtp.${route}_retry`, { queueId: q.id, attempts: q.attempts, runAfter, err });
  }
}
