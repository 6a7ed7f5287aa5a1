import type { Socket } from 'socket.io';
import type { MailboxEvent } from '../../types/mailbox-event.js';
import type { EventService } from '../../core/state/events/event.service.js';
import { eventsEmitted } from '../../telemetry/metric-registry.js';
import { FairGate } from '../../storage/fair-gate.js';
import { resyncNotice, type FeedFollower, type MailboxFeed } from './mailbox-feed.js';

/**
 * Events per replay query. Each page queues at the process's replay gate (FairGate), so a socket
 * with a long backlog takes its turn page by page and cannot starve the others or the API.
 */
export const REPLAY_PAGE = 200;

export const roomOf = (mailboxId: string): string => `mailbox:${mailboxId}`;

type State = 'reading' | 'waiting' | 'live' | 'closed';

/**
 * Resolves once the socket's transport finished writing what it was given (its `drain`: the
 * websocket's bytes reached the kernel, a poll was answered), or the connection upgraded or
 * closed. While it writes, engine.io queues further packets in memory, and it writes only as fast
 * as the kernel takes bytes, which is as fast as the client reads.
 */
export function handedToKernel(socket: Socket): Promise<void> {
  const conn = socket.conn;
  const transport = conn.transport;
  if (conn.readyState !== 'open' || transport.writable) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      transport.off('drain', done);
      conn.off('upgrade', done);
      conn.off('close', done);
      resolve();
    };
    transport.on('drain', done);
    conn.on('upgrade', done);
    conn.on('close', done);
  });
}

/**
 * Brings one socket from its `lastEventId` to the live room with no gap and no duplicate.
 * It follows the feed *before* reading the log, so every event is either in what the log read
 * returned or in what the feed offered since; both are merged by seq (the cursor). The switch to
 * the room happens synchronously when the cursor equals the feed's last emitted seq, so no
 * event can slip between the private stream and the room.
 */
export class CatchUp implements FeedFollower {
  private state: State = 'waiting';
  private buffer: MailboxEvent[] = [];

  constructor(
    private readonly socket: Socket,
    private readonly feed: MailboxFeed,
    private readonly events: EventService,
    /** The last event id the client holds. */
    private cursor: number,
    private readonly onFailure: (err: unknown) => void,
    /** The process's replay gate; a socket of its own when omitted (tests). */
    private readonly gate: FairGate = new FairGate(1),
    /** Called once when the socket reaches live (its replay slot goes back). */
    private readonly onLive: () => void = () => undefined,
  ) {}

  /** `fromLog` false: the cursor is the feed's position already (a client without lastEventId). */
  start(fromLog: boolean): void {
    this.feed.followers.add(this);
    if (!fromLog && this.advance() !== 'read') return;
    void this.read();
  }

  offer(event: MailboxEvent): void {
    if (this.state === 'live' || this.state === 'closed') return;
    this.buffer.push(event);
    if (this.state === 'waiting' && this.advance() === 'read') void this.read();
  }

  close(): void {
    this.state = 'closed';
    this.buffer = [];
    this.feed.followers.delete(this);
  }

  /** A method, not a field test: the state changes across awaits, which narrowing cannot see. */
  private isClosed(): boolean {
    return this.state === 'closed';
  }

  private async read(): Promise<void> {
    if (this.state !== 'waiting') return;
    this.state = 'reading';
    try {
      for (;;) {
        const from = this.cursor;
        const r = await this.gate.run(() => this.events.replay(this.feed.mailbox.id, from, REPLAY_PAGE));
        if (this.isClosed()) return;
        if (r.resyncRequired) {
          // Older than retention: say so explicitly, then continue from the head (never a silent gap).
          this.socket.emit('resync.required', resyncNotice(this.feed.mailbox, from, r, Date.now()));
          this.cursor = r.headSeq;
        } else {
          for (const e of r.events) this.deliver(e);
        }
        if (r.hasMore) {
          // The next page only once this one left the process: a client that reads slowly holds
          // back its own replay instead of parking the whole backlog in this process's memory.
          await handedToKernel(this.socket);
          if (this.isClosed()) return;
          continue;
        }
        const next = this.advance();
        if (next !== 'read') return;
        // The feed had not started when we read: wait for its head, then read up to it.
        if (this.feed.lastSeq === null) await this.feed.whenStarted();
        if (this.isClosed()) return;
      }
    } catch (err) {
      if (!this.isClosed()) this.onFailure(err);
    } finally {
      if (this.state === 'reading') this.state = 'waiting';
    }
  }

  /**
   * Merges the offered events and decides: `live` (joined the room), `wait` (the log read got
   * ahead of the feed; its next offers bring them level) or `read` (a gap only the log can fill).
   */
  private advance(): 'live' | 'wait' | 'read' {
    let i = 0;
    while (i < this.buffer.length) {
      const seq = Number(this.buffer[i]!.eventId);
      if (seq <= this.cursor) i++;
      else if (seq === this.cursor + 1) this.deliver(this.buffer[i++]!);
      else break;
    }
    this.buffer = this.buffer.slice(i);
    if (this.buffer.length > 0 || this.feed.lastSeq === null || this.cursor < this.feed.lastSeq) {
      if (this.state !== 'reading') this.state = 'waiting';
      return 'read';
    }
    if (this.cursor > this.feed.lastSeq) {
      this.state = 'waiting';
      return 'wait';
    }
    this.feed.followers.delete(this);
    this.state = 'live';
    this.onLive();
    void this.socket.join(roomOf(this.feed.mailbox.id));
    // Tells the client the replay is over and from which id live events follow.
    this.socket.emit('subscription.ready', {
      mailboxId: this.feed.mailbox.id,
      mailboxAddress: this.feed.mailbox.address,
      lastEventId: String(this.cursor),
    });
    return 'live';
  }

  private deliver(event: MailboxEvent): void {
    this.cursor = Number(event.eventId);
    this.socket.emit(event.type, event);
    eventsEmitted.inc({ type: event.type });
  }
}
