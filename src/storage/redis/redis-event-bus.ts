import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import type { EventBus } from '../event-bus.js';
import type { MailboxEvent } from '../../types/mailbox-event.js';
import type { StorageLog } from '../storage-log.js';

/** One channel for every mailbox: subscribers filter locally (a map lookup), publishers stay O(1). */
export const EVENTS_CHANNEL = 'mailbox-service:events:v1';

/** What travels on the channel: committed events, or "read the log" after a publisher lost Redis. */
type Wire = { events: MailboxEvent[] } | { resume: true };

/**
 * Redis pub/sub bus: an event committed in any process (API, SMTP, worker) reaches the
 * subscribers of every process. Pub/sub is at-most-once, which is all the bus promises: the
 * log is the truth, and both sides turn a lost connection into a "resume" so subscribers read
 * the log once instead of waiting for the next event to reveal a gap.
 */
export class RedisEventBus implements EventBus {
  private readonly local = new EventEmitter().setMaxListeners(0);
  private subscriber: Redis | null = null;
  /** The subscription is acknowledged and its connection has not been lost since. */
  private subscribed = false;
  private closed = false;
  private readonly offPublisher: () => void;

  constructor(
    private readonly publisher: Redis,
    private readonly log?: StorageLog,
  ) {
    // A publish skipped while the connection was down is announced as a resume once it is back.
    this.offPublisher = watchReconnects(publisher, () => void this.send({ resume: true }));
  }

  get listening(): boolean {
    return this.subscribed && this.subscriber?.status === 'ready';
  }

  async publish(events: readonly MailboxEvent[]): Promise<void> {
    if (events.length > 0) await this.send({ events: [...events] });
  }

  subscribe(listener: (event: MailboxEvent) => void): () => void {
    this.ensureSubscriber();
    this.local.on('event', listener);
    return () => this.local.off('event', listener);
  }

  onResume(listener: () => void): () => void {
    this.ensureSubscriber();
    this.local.on('resume', listener);
    return () => this.local.off('resume', listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.offPublisher();
    this.local.removeAllListeners();
    this.subscribed = false;
    this.subscriber?.disconnect();
    this.subscriber = null;
  }

  /**
   * Never waits for a reconnect: while Redis is down, ioredis would queue the command and hold
   * the HTTP answer or the SMTP 250 that awaits it. Skipping is safe because the log has it.
   */
  private async send(wire: Wire): Promise<void> {
    if (this.closed || this.publisher.status !== 'ready') return;
    try {
      await this.publisher.publish(EVENTS_CHANNEL, JSON.stringify(wire));
    } catch (err) {
      this.log?.warn('events.publish_failed', { message: (err as Error).message });
    }
  }

  /** Processes that only publish (API, SMTP, worker roles) never open the subscriber connection. */
  private ensureSubscriber(): void {
    if (this.subscriber || this.closed) return;
    // A dedicated connection: a subscribed Redis connection can do nothing else. No retry limit,
    // so a long outage ends in a resubscription rather than a dead subscriber. The resubscription
    // is ours (`watchReconnects` below, its failure logged): ioredis 6.0.0's own (autoResubscribe)
    // leaves the SUBSCRIBE it sends on reconnect without a handler, so a close before Redis answers
    // it is an unhandled rejection, which ends a Node process (ioredis PR #2187, merged
    // 2026-09-10, in no release the registry has yet).
    const sub = this.publisher.duplicate({ maxRetriesPerRequest: null, lazyConnect: false, autoResubscribe: false });
    this.subscriber = sub;
    sub.on('error', (err) => this.log?.warn('events.subscriber_error', { message: err.message }));
    sub.on('message', (_channel: string, text: string) => this.receive(text));
    sub.on('close', () => {
      this.subscribed = false;
    });
    // Listening (and a resume) only once Redis acknowledged the subscription: an announcement made
    // between the reconnect and the acknowledgement would otherwise be missed by a listener.
    const subscribe = () =>
      sub.subscribe(EVENTS_CHANNEL).then(
        () => {
          if (this.subscriber === sub) this.subscribed = true;
        },
        (err: Error) => this.log?.warn('events.subscribe_failed', { message: err.message }),
      );
    void subscribe();
    watchReconnects(sub, () => void subscribe().then(() => this.local.emit('resume')));
  }

  private receive(text: string): void {
    let wire: Wire;
    try {
      wire = JSON.parse(text) as Wire;
    } catch {
      return; // not ours; the channel is namespaced, but never let a bad message break the loop
    }
    if ('resume' in wire) {
      this.local.emit('resume');
      return;
    }
    for (const event of wire.events ?? []) this.local.emit('event', event);
  }
}

/** Calls `onBack` each time the connection is ready again after having been lost. */
function watchReconnects(redis: Redis, onBack: () => void): () => void {
  let lost = false;
  const onLost = () => {
    lost = true;
  };
  const onReady = () => {
    if (!lost) return;
    lost = false;
    onBack();
  };
  redis.on('close', onLost);
  redis.on('ready', onReady);
  return () => {
    redis.off('close', onLost);
    redis.off('ready', onReady);
  };
}
