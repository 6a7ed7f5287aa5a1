import type { BaseServices } from '../../base/services.js';
import type { TokenCipher } from '../../access/token-cipher.js';
import { appendEvent } from '../../state/events/event-log.js';
import { type MailboxEvent } from '../../../types/mailbox-event.js';
import { retryDelayMs, type RetryPolicy } from '../outbound/retry.js';
import type { NetworkTargetPolicy } from '../../base/net/network-targets.js';
import {
  claimDelivery,
  disableWebhook,
  markDelivered,
  markFailed,
  type ClaimedDelivery,
} from './webhook-outbox.store.js';
import { sendWebhook } from './webhook-sender.js';
import { PollingLoop } from '../../base/loops/polling-loop.js';
import { WebhookWake } from './webhook-wake.js';

/** The disabled reason of a webhook whose registering token went away. */
export const REVOKED_REASON = 'the token that registered this webhook is disabled, deleted or expired';

export interface WebhookWorkerOptions {
  workerId: string;
  pollIntervalMs: number;
  /** WORKER_LEASE: how long a crashed worker's claim blocks its delivery (see webhookLeaseMs). */
  leaseMs: number;
  /** Per attempt: connect, send and the 2xx answer must fit in it. */
  timeoutMs: number;
  /** Per attempt: the connect alone. */
  connectTimeoutMs: number;
  /** WEBHOOK_IN_FLIGHT_PER_DOMAIN: one tenant's share of the deliveries in flight. */
  inFlightPerDomain: number;
  retry: RetryPolicy;
  /** A webhook failing without a single success for this long is disabled. */
  disableAfterMs: number;
  /** Deliveries in flight at once in this process (different webhooks or mailboxes). */
  concurrency: number;
  policy: NetworkTargetPolicy;
}

/**
 * The lease on a claimed delivery: WORKER_LEASE, but never under three attempt timeouts, so an
 * attempt still in flight to a slow receiver (the sender cuts it at WEBHOOK_TIMEOUT) cannot be
 * retaken and sent a second time at once by another worker; after a crash the delivery waits
 * this long, then any worker takes it again (docs/api.md, "Webhooks").
 */
export const webhookLeaseMs = (workerLeaseMs: number, timeoutMs: number): number =>
  Math.max(workerLeaseMs, 3 * timeoutMs);

/**
 * Delivers the webhook outbox (docs/api.md, "Webhooks"), in the worker role. `concurrency` loops
 * each claim one due row under a lease (SKIP LOCKED), so any number of workers and loops never
 * send the same attempt twice at once, while one slow receiver holds only one loop per mailbox
 * queue. Wakes on the events some webhook wants (WebhookWake), and polls for the
 * rest (other replicas, retries, a webhook newer than what WebhookWake remembers).
 */
export class WebhookWorker {
  private readonly loop: PollingLoop;

  constructor(
    private readonly services: BaseServices,
    private readonly cipher: TokenCipher,
    private readonly options: WebhookWorkerOptions,
  ) {
    this.loop = new PollingLoop(() => this.runOnce(), {
      intervalMs: options.pollIntervalMs,
      concurrency: options.concurrency,
      onError: (err) => services.log.warn('webhook.poll_failed', { workerId: options.workerId, err }),
      wakeOn: (kick) => {
        const wake = new WebhookWake(services.db, services.clock);
        return services.bus.subscribe((event) => {
          void wake.wanted(event.mailboxId, event.type).then((wanted) => wanted && kick());
        });
      },
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Claims and attempts one due delivery; false when nothing was due. */
  async runOnce(): Promise<boolean> {
    const { db, clock } = this.services;
    // The lease outlives one attempt by far, so it never needs renewing mid-send.
    const leaseMs = webhookLeaseMs(this.options.leaseMs, this.options.timeoutMs);
    const d = await claimDelivery(
      db,
      this.options.workerId,
      { leaseMs, inFlightPerDomain: this.options.inFlightPerDomain },
      clock.now(),
    );
    if (!d) return false;
    if (!d.creatorValid) {
      // The webhook speaks for its token: once that token can no longer read, nothing more is sent.
      await this.disable(d, REVOKED_REASON);
      return true;
    }
    const outcome = await sendWebhook(d.url, this.cipher.decrypt(d.secretCipher, d.webhookId), d.payload, {
      timeoutMs: this.options.timeoutMs,
      connectTimeoutMs: this.options.connectTimeoutMs,
      policy: this.options.policy,
      now: clock.now(),
      subscriptionId: d.subscriptionId,
    });
    const now = clock.now();
    if (outcome.ok) {
      await markDelivered(db, d, this.options.workerId, now);
      return true;
    }
    const retryAt = new Date(now.getTime() + retryDelayMs(d.attempts + 1, this.options.retry));
    const { failingSince } = await markFailed(db, d, this.options.workerId, outcome.error, retryAt, now, (failures) =>
      retryDelayMs(failures, this.options.retry),
    );
    if (now.getTime() - failingSince.getTime() >= this.options.disableAfterMs)
      await this.disable(
        d,
        `failing since more than ${Math.round(this.options.disableAfterMs / 3_600_000)} h; last error: ${outcome.error}`,
      );
    return true;
  }

  private async disable(d: ClaimedDelivery, reason: string): Promise<void> {
    const { db, clock, bus, log } = this.services;
    const events = await db.tx(async (trx) => {
      const now = clock.now();
      const mailboxes = await disableWebhook(trx, d.webhookId, reason, now);
      const out: MailboxEvent[] = [];
      for (const mailboxId of mailboxes)
        out.push(
          await appendEvent(trx, mailboxId, 'webhook.disabled', { webhookId: d.webhookId, url: d.url, reason }, now),
        );
      return out;
    });
    log.warn('webhook.disabled', { webhookId: d.webhookId, reason });
    await bus.publish(events).catch(() => undefined);
  }
}
