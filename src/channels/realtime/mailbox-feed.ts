import type { MailboxRef } from '../../core/access/principal.js';
import type { MailboxEvent } from '../../types/mailbox-event.js';
import type { EventService, ReplayResult } from '../../core/state/events/event.service.js';
import type { Logger } from '../../core/base/logger.js';

/** A socket still catching up from the log: it sees every event the feed emits, in order. */
export interface FeedFollower {
  offer(event: MailboxEvent): void;
}

export interface FeedOutput {
  /** Emits to the caught-up local sockets of a mailbox (its room); a no-op for an empty room. */
  toRoom(mailboxId: string, name: string, payload: object): void;
  log: Logger;
}

/** What `resync.required` carries: refetch state, then events continue after headEventId. */
export function resyncNotice(mailbox: MailboxRef, after: number, r: ReplayResult, now: number): object {
  return {
    type: 'resync.required',
    mailboxId: mailbox.id,
    mailboxAddress: mailbox.address,
    lastEventId: String(after),
    oldestEventId: r.oldestSeq === null ? null : String(r.oldestSeq),
    headEventId: String(r.headSeq),
    occurredAtTs: now,
  };
}

const FILL_PAGE = 500;

/**
 * One mailbox's live events in this process, emitted to its room strictly in sequence order,
 * once each. Bus announcements may arrive late, twice, out of order or not at all: a repeat is
 * dropped by seq, an early one waits in `pending`, and a gap is filled from the log (the truth).
 * Exists only while the mailbox has sockets here, so mailboxes nobody follows cost nothing.
 */
export class MailboxFeed {
  /** Highest seq emitted; null until the head is known. */
  lastSeq: number | null = null;
  readonly followers = new Set<FeedFollower>();
  /** Sockets attached here (caught up or catching up); the hub drops the feed at zero. */
  subscribers = 0;
  private readonly pending = new Map<number, MailboxEvent>();
  private filling: Promise<void> | null = null;
  private refill = false;
  private markStarted!: () => void;
  private readonly started = new Promise<void>((resolve) => {
    this.markStarted = resolve;
  });

  constructor(
    readonly mailbox: MailboxRef,
    private readonly events: EventService,
    private readonly out: FeedOutput,
  ) {
    void this.start();
  }

  /** Resolves once the feed knows where the log stands. */
  whenStarted(): Promise<void> {
    return this.started;
  }

  /** A bus announcement. */
  receive(event: MailboxEvent): void {
    const seq = Number(event.eventId);
    if (this.lastSeq !== null && seq <= this.lastSeq) return;
    this.pending.set(seq, event);
    this.flush();
    if (this.pending.size > 0 && this.lastSeq !== null) void this.fill();
  }

  /** The hub's periodic check and bus resumes: catch up when the log is ahead of what we emitted. */
  heal(headSeq: number): void {
    if (this.lastSeq === null) void this.start();
    else if (headSeq > this.lastSeq) void this.fill();
  }

  private async start(): Promise<void> {
    try {
      const head = await this.events.head(this.mailbox.id);
      if (this.lastSeq !== null) return;
      // Events up to the head committed before anyone here followed; followers read them from the log.
      this.lastSeq = head;
      this.markStarted();
      this.flush();
      if (this.pending.size > 0) void this.fill();
    } catch (err) {
      this.out.log.warn('realtime.feed_start_failed', { mailboxId: this.mailbox.id, err }); // heal() retries
    }
  }

  /** Emits what is contiguous with lastSeq and forgets what is already behind it. */
  private flush(): void {
    if (this.lastSeq === null) return;
    for (let next = this.pending.get(this.lastSeq + 1); next; next = this.pending.get(this.lastSeq + 1)) {
      this.pending.delete(this.lastSeq + 1);
      this.emit(next);
    }
    for (const seq of this.pending.keys()) if (seq <= this.lastSeq) this.pending.delete(seq);
  }

  /** Reads the log after lastSeq; one read at a time, repeated while more is known to exist. */
  private fill(): Promise<void> {
    if (this.filling) {
      this.refill = true;
      return this.filling;
    }
    this.filling = (async () => {
      do {
        this.refill = false;
        const from = this.lastSeq!;
        const r = await this.events.replay(this.mailbox.id, from, FILL_PAGE);
        if (r.resyncRequired) this.skipTo(from, r);
        // Announcements flushed during the await already advanced lastSeq; emit only the next one.
        else for (const e of r.events) if (Number(e.eventId) === this.lastSeq! + 1) this.emit(e);
        if (r.hasMore) this.refill = true;
      } while (this.refill);
    })()
      .catch((err) => this.out.log.warn('realtime.feed_fill_failed', { mailboxId: this.mailbox.id, err }))
      // No new fill from here: a failing database would turn it into a tight loop; heal() retries.
      .finally(() => {
        this.filling = null;
        this.flush();
      });
    return this.filling;
  }

  /** Retention removed events nobody here saw yet: tell the room, continue from the head. */
  private skipTo(from: number, r: ReplayResult): void {
    this.out.toRoom(this.mailbox.id, 'resync.required', resyncNotice(this.mailbox, from, r, Date.now()));
    this.lastSeq = r.headSeq;
    this.flush();
  }

  private emit(event: MailboxEvent): void {
    this.lastSeq = Number(event.eventId);
    // Room first: a follower that joins the room while handling this offer must not get it twice.
    this.out.toRoom(this.mailbox.id, event.type, event);
    for (const follower of this.followers) follower.offer(event);
  }
}
