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
  QueueRowNotWritten,
  type ClaimedRow,
  type IntakeQueueTable,
} from './intake-queue.store.js';
import type { HandoffClaim, HandoffReceiver, LocalHandoff } from './local-handoff.js';

/** One SMTP intake queue as its worker drives it (port 25's and port 587's). */
export interface IntakeQueue<Q extends ClaimedRow> {
  /** `inbound` (25) or `submission` (587): the metrics' route and the log events' names. */
  readonly route: 'inbound' | 'submission';
  readonly table: IntakeQueueTable;
  claim(lockedBy: string, limit: number, leaseMs: number, now: Date): Promise<Q[]>;
  /**
   * Stores `q`'s message, deleting its row in the same commit; how many copies were stored. A row
   * handed over while its commit is in flight comes with `committed`: the message may be prepared
   * meanwhile, but nothing is written and no error reported before it settles (it rejects with
   * QueueRowNotWritten when the commit failed).
   */
  store(q: Q, committed?: Promise<void>): Promise<number>;
  /** Gives back the quota `q` reserved at intake, in the transaction that sets it aside. */
  release(trx: Sql, q: Q): Promise<void>;
  /** Rows this process queues, handed to its worker as they commit (or announced to it after). */
  readonly handoff: LocalHandoff<Q>;
}

export interface IntakeQueueWorkerOptions {
  workerId: string;
  /** How often an idle worker looks at the queue (a queue filled by another process). */
  pollIntervalMs: number;
  leaseMs: number;
  /**
   * Rows in flight at once, claimed or handed over by this process's intake; their commits share
   * transactions (the intake's CommitGroup).
   */
  batch: number;
  retry: RetryPolicy;
  /** Attempts before a message that keeps failing is set aside as `failed`. */
  maxAttempts: number;
}

/**
 * Stores what queued intake accepted (docs/api.md, "Queued intake"): takes the rows this process's
 * intake writes already claimed for it (LocalHandoff) while it has room, claims due rows of one
 * queue otherwise (those queued elsewhere, while it was busy, or whose worker died) and stores
 * each, the row deleted in the same commit. It polls for rows queued by other processes. Safe with
 * any number of workers (SKIP LOCKED, leases).
 *
 * A refusal found only now (an AppError: the quota's excess over the reservation, say) cannot be
 * answered over SMTP any more: the row is kept as `failed` with its reason (smtp.<route>_failed)
 * and its reservation given back. Anything else (storage down, a bug) is retried with backoff,
 * then set aside the same way after `maxAttempts`.
 */
export class IntakeQueueWorker<Q extends ClaimedRow> implements HandoffReceiver<Q> {
  private readonly loop: PollingLoop;
  /** Rows claimed, reserved for a hand-off or handed over, and not yet finished. */
  private inFlight = 0;
  /** Counts rows this process queued unclaimed; `claimedThrough` is the count a claim last emptied them at. */
  private unclaimed = 0;
  private claimedThrough = 0;
  /** The last claim took all it had room for: more rows may be due. */
  private backlog = false;
  private stopping = false;
  /** Callers waiting for `inFlight` to fall to a level (stop, drain). */
  private readonly waiters = new Set<{ level: number; resolve: () => void }>();
  private detach: (() => void) | undefined;

  constructor(
    private readonly db: Database,
    private readonly queue: IntakeQueue<Q>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: IntakeQueueWorkerOptions,
  ) {
    this.loop = new PollingLoop(async () => (await this.fill()).length > 0, {
      intervalMs: options.pollIntervalMs,
      onError: (err) => log.warn(`${queue.route}_queue.poll_failed`, { workerId: options.workerId, err }),
    });
  }

  start(): void {
    this.stopping = false;
    this.detach = this.queue.handoff.attach(this);
    this.loop.start();
  }

  /** Stops claiming and taking rows, and waits for the messages in flight. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.detach?.();
    await this.loop.stop();
    await this.inFlightAtMost(0);
  }

  reserve(): HandoffClaim | null {
    if (this.stopping || this.inFlight >= this.options.batch) return null;
    this.inFlight++;
    return { lockedBy: this.options.workerId, leaseUntil: new Date(this.clock.now().getTime() + this.options.leaseMs) };
  }

  take(q: Q, committed: Promise<unknown>): void {
    const written = committed.then(
      () => undefined,
      (cause: unknown) => {
        throw new QueueRowNotWritten(q.id, cause);
      },
    );
    written.catch(() => undefined); // the intake answers the failure; the store below awaits it
    void this.store(q, written).finally(() => this.finished(1));
  }

  kick(): void {
    this.unclaimed++;
    this.loop.kick();
  }

  /** Claims and stores one batch, as many rows as there is room for; the number of rows claimed. */
  async runOnce(): Promise<number> {
    const stores = await this.fill();
    await Promise.all(stores);
    return stores.length;
  }

  /**
   * Stores every due row as the running loop does (the batch kept full, claims at half free)
   * until a claim finds none and nothing is in flight; the number stored. For a backlog drained
   * without the loop's timer (benches, tests).
   */
  async drain(): Promise<number> {
    let stored = 0;
    for (;;) {
      const claimed = (await this.fill()).length;
      stored += claimed;
      if (this.backlog) await this.inFlightAtMost(this.options.batch / 2);
      else if (this.inFlight > 0) await this.inFlightAtMost(0);
      else if (claimed === 0) return stored;
    }
  }

  /**
   * Claims as many due rows as there is room for and starts storing them, without waiting: the
   * loop claims again when half the batch has finished (`finished`), so a backlog keeps the batch
   * full instead of waiting for each batch's slowest message.
   */
  private async fill(): Promise<Promise<void>[]> {
    const { workerId, batch, leaseMs } = this.options;
    const room = batch - this.inFlight;
    if (room <= 0) return [];
    this.inFlight += room; // held while the claim runs, so hand-offs meanwhile stay within the batch
    const seen = this.unclaimed;
    let claimed: Q[];
    try {
      claimed = await this.queue.claim(workerId, room, leaseMs, this.clock.now());
    } catch (err) {
      this.finished(room);
      throw err;
    }
    if (claimed.length < room) this.claimedThrough = seen; // nothing queued here before the claim is left
    this.backlog = claimed.length === room; // a full claim: more may be due
    this.finished(room - claimed.length);
    return claimed.map((q) => this.store(q).finally(() => this.finished(1)));
  }

  private finished(n: number): void {
    if (n === 0) return;
    this.inFlight -= n;
    // Room again while rows wait (a full claim left more due, or rows this process queued
    // unclaimed): claim them, once half the batch is free so claims stay batches.
    const waiting = this.backlog || this.unclaimed > this.claimedThrough;
    if (waiting && !this.stopping && this.inFlight <= this.options.batch / 2) this.loop.kick();
    for (const waiter of this.waiters) {
      if (this.inFlight > waiter.level) continue;
      this.waiters.delete(waiter);
      waiter.resolve();
    }
  }

  private inFlightAtMost(level: number): Promise<void> {
    if (this.inFlight <= level) return Promise.resolve();
    return new Promise((resolve) => this.waiters.add({ level, resolve }));
  }

  private async store(q: Q, committed?: Promise<void>): Promise<void> {
    try {
      const copies = await this.queue.store(q, committed);
      if (copies) observability().deliveryOutcome(this.queue.route, 'delivered', copies);
    } catch (err) {
      // Another worker took it over after our lease ran out, or (QueueRowNotWritten) it never was ours.
      if (err instanceof QueueClaimLost) return;
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
