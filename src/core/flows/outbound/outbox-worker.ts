import type { BaseServices } from '../../base/services.js';
import type { FlowServices } from '../services.js';
import { observability } from '../../base/observability.js';
import { claimDueJob, finishJob, postponeJob, type ClaimedJob } from './outbox-job.store.js';
import { deliverMessage, type TransferContext } from './deliver-job.js';
import { withLease } from './job-lease.js';
import { DEFAULT_RETRY, retryDelayMs, type RetryPolicy } from './retry.js';
import { PollingLoop } from '../../base/loops/polling-loop.js';

export interface OutboxWorkerOptions {
  pollIntervalMs: number;
  leaseMs: number;
  workerId: string;
  /**
   * Jobs in flight at once (default 1), each its own claim: a slow remote server holds one slot,
   * not the queue. Local deliveries into one mailbox still take turns on its row lock.
   */
  concurrency?: number;
  /** When a job still has recipients waiting for the external transport, look again after this. */
  externalRetryMs?: number;
  /** Backoff after temporary failures (deferred recipients, errors); default 1 min doubling to 1 h, with jitter. */
  retry?: RetryPolicy;
}

/** Until the SMTP transport exists, external recipients wait; retrying them sooner only spins. */
export const EXTERNAL_NOT_CONFIGURED = 'external delivery not configured';
const DEFAULT_EXTERNAL_RETRY_MS = 10 * 60_000;

/**
 * Claims due outbox jobs and delivers them, `concurrency` at a time. It polls every pollIntervalMs
 * and wakes at once when this process queues mail (bus `message.sent`). Safe with any number of
 * workers: jobs are claimed with SKIP LOCKED under a lease, recipients are delivered at most once.
 */
export class OutboxWorker {
  private readonly loop: PollingLoop;

  constructor(
    protected readonly services: BaseServices & Pick<FlowServices, 'inbound' | 'transport' | 'sending'>,
    protected readonly options: OutboxWorkerOptions,
  ) {
    this.loop = new PollingLoop(() => this.runOnce(), {
      intervalMs: options.pollIntervalMs,
      concurrency: options.concurrency ?? 1,
      // Claiming failed (database down …): wait a poll interval rather than spin.
      onError: (err) => services.log.warn('outbox.poll_failed', { workerId: options.workerId, err }),
      wakeOn: (kick) =>
        services.bus.subscribe((event) => {
          if (event.type === 'message.sent' || event.type === 'message.approved') kick();
        }),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops polling and waits for the jobs in flight to finish (their leases are then released). */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Looks for due work now instead of at the next poll. */
  kick(): void {
    this.loop.kick();
  }

  /** Claims and processes one due job; false when nothing was due. */
  async runOnce(): Promise<boolean> {
    const { db, clock } = this.services;
    const job = await claimDueJob(db, this.options.workerId, this.options.leaseMs, clock.now());
    if (!job) return false;
    await this.withJobSpan(job, () => this.process(job));
    return true;
  }

  private async process(job: ClaimedJob): Promise<void> {
    const { db, clock, inbound, bus, log } = this.services;
    try {
      if (job.admit && !(await this.admitScheduled(job))) return;
      // The lease is renewed while the job runs, so a long SMTP conversation keeps it.
      const outcome = await withLease(
        db,
        job,
        this.options.workerId,
        this.options.leaseMs,
        () => clock.now(),
        (lease) => deliverMessage(db, inbound, job.messageId, clock.now(), { deps: this.transferDeps(), lease }),
      );
      if (outcome.events.length)
        await bus.publish(outcome.events).catch((err) => log.warn('events.publish_failed', { err }));
      const now = clock.now();
      if (outcome.waiting > 0) {
        const retryMs = this.options.externalRetryMs ?? DEFAULT_EXTERNAL_RETRY_MS;
        // Once per message (its first claim): without this an operator sees "queued" forever and no reason.
        if (job.attempts <= 1)
          log.warn('outbox.external_delivery_not_configured', {
            messageId: job.messageId,
            waiting: outcome.waiting,
            hint: 'external recipients stay queued: set SMTP_RELAY_URL or SMTP_DELIVERY=mx',
          });
        await postponeJob(
          db,
          job,
          this.options.workerId,
          new Date(now.getTime() + retryMs),
          EXTERNAL_NOT_CONFIGURED,
          now,
        );
      } else if (outcome.deferred) {
        const delay = retryDelayMs(job.attempts, this.options.retry ?? DEFAULT_RETRY);
        await postponeJob(
          db,
          job,
          this.options.workerId,
          new Date(now.getTime() + delay),
          `${outcome.deferred} recipient(s) deferred`,
          now,
        );
      } else {
        await finishJob(db, job, this.options.workerId, now);
      }
      log.info('outbox.job_processed', {
        jobId: job.id,
        messageId: job.messageId,
        waiting: outcome.waiting,
        deferred: outcome.deferred ?? 0,
        changes: outcome.events.length,
      });
    } catch (err) {
      // Exponential backoff with jitter; recipients delivered so far stay delivered.
      const now = clock.now();
      const delay = retryDelayMs(job.attempts, this.options.retry ?? DEFAULT_RETRY);
      log.error('outbox.job_failed', { jobId: job.id, messageId: job.messageId, attempts: job.attempts, err });
      await postponeJob(
        db,
        job,
        this.options.workerId,
        new Date(now.getTime() + delay),
        err instanceof Error ? err.message : String(err),
        now,
      ).catch((e) => log.warn('outbox.postpone_failed', { jobId: job.id, err: e }));
    }
  }

  /**
   * A scheduled send at its due time: the policy, loop guard, rate limit and approval decide it
   * now (SendService.admitScheduled). True when it goes on to delivery in this run.
   */
  private async admitScheduled(job: ClaimedJob): Promise<boolean> {
    const { db, clock, sending, log } = this.services;
    const admit = job.admit!;
    const outcome = await sending.admitScheduled(job.messageId, {
      tokenId: admit.tokenId,
      channel: admit.channel,
    });
    const now = clock.now();
    log.info('outbox.scheduled_admitted', { jobId: job.id, messageId: job.messageId, outcome: outcome.kind });
    if (outcome.kind === 'later') {
      await postponeJob(
        db,
        job,
        this.options.workerId,
        new Date(now.getTime() + outcome.retryAfterMs),
        'scheduled send over its rate limit',
        now,
      );
      return false;
    }
    if (outcome.kind !== 'send') {
      await finishJob(db, job, this.options.workerId, now);
      return false;
    }
    return true;
  }

  /** The transport side of delivery: external sends, DKIM, bounces, the give-up age. */
  private transferDeps(): TransferContext['deps'] {
    const { db, blobs, inbound, log, config, transport } = this.services;
    return {
      db,
      blobs,
      inbound,
      log,
      dkim: transport.dkim,
      transport: transport.external,
      hostname: transport.hostname,
      maxAgeMs: config.MAX_DELIVERY_AGE,
    };
  }

  /** Continues the sender's trace (traceparent stored with the job) across the queue. */
  private withJobSpan(job: ClaimedJob, fn: () => Promise<void>): Promise<void> {
    return observability().inConsumerSpan(
      'outbox.deliver',
      job.traceContext,
      { 'mailbox.job_id': job.id, 'mailbox.message_id': job.messageId, 'mailbox.attempt': job.attempts },
      fn,
    );
  }
}
