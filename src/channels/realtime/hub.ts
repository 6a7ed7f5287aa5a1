import type { Server, Socket } from 'socket.io';
import type { Services } from '../../core/services.js';
import type { MailboxEvent } from '../../types/mailbox-event.js';
import { subscriptionKey } from '../../core/state/events/event.service.js';
import { eventsEmitted, socketsConnected } from '../../telemetry/metric-registry.js';
import { CatchUp, roomOf } from './catch-up.js';
import { AppError } from '../../core/base/errors.js';
import { socketError, type Subscriber } from './handshake.js';
import { MailboxFeed } from './mailbox-feed.js';

/**
 * Revocation: every 500 ms one query re-checks the tokens of all sockets on this process, so a
 * token disabled, deleted or expired (and a mailbox or domain disabled) is cut off within a
 * second. Chosen over a revocation notice on the bus because expiry has no event at all, tokens
 * are disabled from several places (API, declared resources, direct SQL), and a lost notice
 * would leave a socket open forever; the query is one indexed look-up per process.
 */
const REVALIDATE_INTERVAL_MS = 500;
/** Safety net for announcements the bus lost: compare each followed mailbox's head with the log. */
const HEAL_INTERVAL_MS = 2000;

/**
 * The real-time hub of one process. Every realtime replica subscribes to the event bus and
 * emits only to its own sockets (`io.local`): each socket lives on exactly one replica, so each
 * event reaches each socket once, and replay state (the per-socket cursor) stays local. The
 * Redis adapter, when configured, serves cross-replica room operations, not event fan-out.
 */
export class RealtimeHub {
  private readonly feeds = new Map<string, MailboxFeed>();
  /**
   * This process's sockets by (token, mailbox): revalidation asks about each pair once, so a tick
   * costs the number of tokens in use, not the number of sockets (thousands share a token here).
   */
  private readonly bySubscription = new Map<string, { tokenId: string; mailboxId: string; sockets: Set<Socket> }>();
  private readonly stops: Array<() => void> = [];
  private revalidating = false;
  private healing = false;

  constructor(
    private readonly io: Server,
    private readonly services: Services,
  ) {}

  start(): void {
    const { bus } = this.services;
    this.stops.push(bus.subscribe((event) => this.onEvent(event)));
    this.stops.push(bus.onResume(() => void this.healAll()));
    const revalidate = setInterval(() => void this.revalidate(), REVALIDATE_INTERVAL_MS);
    const heal = setInterval(() => void this.healAll(), HEAL_INTERVAL_MS);
    revalidate.unref();
    heal.unref();
    this.stops.push(
      () => clearInterval(revalidate),
      () => clearInterval(heal),
    );
  }

  stop(): void {
    for (const stop of this.stops.splice(0)) stop();
  }

  /** A socket that passed the handshake: replay from its lastEventId, then the room. */
  async attach(socket: Socket, sub: Subscriber): Promise<void> {
    socketsConnected.inc();
    const feed = this.feedFor(sub);
    feed.subscribers++;
    const pair = { tokenId: sub.principal.tokenId, mailboxId: sub.mailbox.id };
    const key = subscriptionKey(pair);
    let group = this.bySubscription.get(key);
    if (!group) this.bySubscription.set(key, (group = { ...pair, sockets: new Set() }));
    group.sockets.add(socket);
    let catchUp: CatchUp | null = null;
    socket.once('disconnect', () => {
      socketsConnected.dec();
      group.sockets.delete(socket);
      if (group.sockets.size === 0 && this.bySubscription.get(key) === group) this.bySubscription.delete(key);
      catchUp?.close();
      if (--feed.subscribers === 0 && this.feeds.get(feed.mailbox.id) === feed) this.feeds.delete(feed.mailbox.id);
    });
    const fail = (err: unknown) => this.close(socket, new AppError('EVENT_LOG_UNAVAILABLE', undefined, { cause: err }));
    if (sub.lastEventId === null) {
      // Live from now: the feed's position is "now" for this process.
      if (feed.lastSeq === null) await feed.whenStarted();
      if (!socket.connected) return;
      catchUp = new CatchUp(socket, feed, this.services.events, feed.lastSeq!, fail, this.services.replayGate);
      catchUp.start(false);
    } else {
      catchUp = new CatchUp(
        socket,
        feed,
        this.services.events,
        sub.lastEventId,
        fail,
        this.services.replayGate,
        sub.replayDone,
      );
      catchUp.start(true);
    }
  }

  private feedFor(sub: Subscriber): MailboxFeed {
    let feed = this.feeds.get(sub.mailbox.id);
    if (!feed) {
      feed = new MailboxFeed(sub.mailbox, this.services.events, {
        log: this.services.log,
        toRoom: (mailboxId, name, payload) => {
          const room = roomOf(mailboxId);
          if (!this.io.sockets.adapter.rooms.get(room)?.size) return; // nobody caught up here yet
          this.io.local.to(room).emit(name, payload);
          eventsEmitted.inc({ type: name });
        },
      });
      this.feeds.set(sub.mailbox.id, feed);
    }
    return feed;
  }

  /** Mailboxes nobody follows on this process cost a map miss. */
  private onEvent(event: MailboxEvent): void {
    this.feeds.get(event.mailboxId)?.receive(event);
  }

  private async healAll(): Promise<void> {
    if (this.healing || this.feeds.size === 0) return;
    this.healing = true;
    try {
      const heads = await this.services.events.heads([...this.feeds.keys()]);
      for (const [mailboxId, feed] of this.feeds) {
        const head = heads.get(mailboxId);
        if (head !== undefined) feed.heal(head); // undefined: the mailbox row is gone; revalidation closes its sockets
      }
    } catch (err) {
      this.services.log.warn('realtime.heal_failed', { err });
    } finally {
      this.healing = false;
    }
  }

  private async revalidate(): Promise<void> {
    if (this.revalidating || this.bySubscription.size === 0) return;
    this.revalidating = true;
    try {
      const groups = [...this.bySubscription.values()];
      const valid = await this.services.events.stillAuthorized(groups);
      for (const group of groups) {
        if (valid.has(subscriptionKey(group))) continue;
        // A socket that attached while the query ran goes too: its pair is no longer valid.
        for (const socket of [...group.sockets]) this.close(socket, new AppError('ACCESS_REVOKED'));
      }
    } catch (err) {
      this.services.log.warn('realtime.revalidate_failed', { err }); // keep sockets; retry next tick
    } finally {
      this.revalidating = false;
    }
  }

  /** Server-side close: a last `subscription.closed` with the catalog payload, then the disconnect. */
  private close(socket: Socket, reason: AppError): void {
    if (reason.cause)
      this.services.log.warn('realtime.socket_closed', { socketId: socket.id, code: reason.code, err: reason.cause });
    socket.emit('subscription.closed', socketError(reason, this.services.log, 'close').data);
    socket.disconnect(true);
  }
}
