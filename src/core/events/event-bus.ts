import { EventEmitter } from 'node:events';
import type { MailboxEvent } from './event-log.js';

/**
 * Publishes committed events to subscribers (the real-time hub, long-polls). The log is the
 * source of truth; the bus only says "look now", so a lost publish is healed by replay.
 * In process by default; the Redis implementation arrives with the real-time channel.
 */
export interface EventBus {
  publish(events: readonly MailboxEvent[]): Promise<void>;
  subscribe(listener: (event: MailboxEvent) => void): () => void;
  close(): Promise<void>;
}

export class InProcessEventBus implements EventBus {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  async publish(events: readonly MailboxEvent[]): Promise<void> {
    for (const event of events) this.emitter.emit('event', event);
  }

  subscribe(listener: (event: MailboxEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}
