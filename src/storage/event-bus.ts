import { EventEmitter } from 'node:events';
import type { MailboxEvent } from '../types/mailbox-event.js';

/**
 * Announces committed events to subscribers (the real-time hub). The log is the source of truth;
 * the bus only says "look now": a lost or late announcement is healed by reading the log, so
 * `publish` never fails the change that caused it and subscribers must tolerate loss, repeats
 * and reordering (the hub orders by the per-mailbox sequence).
 */
export interface EventBus {
  /**
   * True while every announcement published from now on, by any process, reaches this process's
   * subscribers (in process: always; Redis: subscribed and connected). What is remembered from
   * announcements (core/messages/change-sequence.ts) is trusted only while it holds.
   */
  readonly listening: boolean;
  /** Called after commit. Resolves even when the announcement could not be sent. */
  publish(events: readonly MailboxEvent[]): Promise<void>;
  subscribe(listener: (event: MailboxEvent) => void): () => void;
  /**
   * Called when the bus regained a lost connection: announcements made meanwhile may be gone,
   * so subscribers should read the log once. An in-process bus never loses any.
   */
  onResume(listener: () => void): () => void;
  close(): Promise<void>;
}

/** The single-process bus (embedded default, no Redis): every role runs in this process. */
export class InProcessEventBus implements EventBus {
  private readonly emitter = new EventEmitter().setMaxListeners(0);
  readonly listening = true;

  async publish(events: readonly MailboxEvent[]): Promise<void> {
    for (const event of events) this.emitter.emit('event', event);
  }

  subscribe(listener: (event: MailboxEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  onResume(_listener: () => void): () => void {
    return () => undefined;
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}
