import type { Database } from '../../../storage/database.js';
import type { EventBus } from '../../../storage/event-bus.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { changeSequenceOfMailbox } from './change-mark.store.js';

export interface ChangeSequenceOptions {
  /**
   * Keep sequences in memory: only where the bus announces every change of every process to this
   * one (a single process, or Redis between replicas). PostgreSQL without Redis may be several
   * processes that share no bus, so there every read asks the database (services.ts decides).
   */
  cached: boolean;
  /** An entry is read again after this long without an announcement: the bus may lose one. */
  maxAgeMs: number;
  /** Bound of the mailboxes remembered; the oldest entry goes first. */
  maxEntries?: number;
}

interface Entry {
  seq: number | null;
  at: number;
}

/** A read in flight; `floor` is the highest sequence announced meanwhile. */
interface Loading {
  promise: Promise<number | null>;
  floor: number;
  generation: number;
}

/**
 * The change sequence of each mailbox (`mailbox.event_seq`, bumped in the transaction of every
 * change to its mail, and carried by each announced event as its `eventId`): what change marks
 * and waits compare (docs/api.md, "Change marks and ETags").
 *
 * Cached, an unchanged mailbox's sequence costs no query. Rules: an announced event raises its
 * mailbox's entry (never lowers: announcements come late, repeated or out of order); a read that
 * began before an announcement cannot store an older value than it; while the bus is not
 * listening (Redis lost) nothing is served from memory, and when it listens again (onResume)
 * everything is dropped; an entry is read again after `maxAgeMs` at the latest.
 */
export class ChangeSequences {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Loading>();
  /** Bumped by `clear`: a read begun before it stores nothing. */
  private generation = 0;
  private readonly stops: Array<() => void> = [];

  constructor(
    private readonly db: Database,
    private readonly bus: EventBus,
    private readonly options: ChangeSequenceOptions,
  ) {
    if (!options.cached) return;
    this.stops.push(
      bus.subscribe((event) => this.announced(event)),
      bus.onResume(() => this.clear()),
    );
  }

  get cached(): boolean {
    return this.options.cached;
  }

  /** The current sequence of a mailbox (null: no such mailbox); from memory where that is safe. */
  async ofMailbox(mailboxId: string): Promise<number | null> {
    if (!this.options.cached) return changeSequenceOfMailbox(this.db, mailboxId);
    if (!this.bus.listening) {
      this.clear();
      return changeSequenceOfMailbox(this.db, mailboxId);
    }
    const entry = this.entries.get(mailboxId);
    if (entry && performance.now() - entry.at < this.options.maxAgeMs) return entry.seq;
    return this.load(mailboxId);
  }

  /** The sequence read from the database, bypassing memory (and refreshing it). */
  fresh(mailboxId: string): Promise<number | null> {
    return this.options.cached ? this.load(mailboxId, true) : changeSequenceOfMailbox(this.db, mailboxId);
  }

  /**
   * A committed sequence seen elsewhere: in an announcement, in a read that returned it with its
   * data, or published by this process (so its own next read is never older than its own write).
   * Raises what is remembered or being read; remembers nothing new.
   */
  raise(mailboxId: string, seq: number): void {
    if (!this.options.cached) return;
    const pending = this.loading.get(mailboxId);
    if (pending) pending.floor = Math.max(pending.floor, seq);
    const entry = this.entries.get(mailboxId);
    if (entry && (entry.seq === null || entry.seq < seq)) entry.seq = seq;
  }

  /** The events this process publishes, before the bus carries them (see announcingLocally). */
  published(events: readonly MailboxEvent[]): void {
    for (const event of events) this.announced(event);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  close(): void {
    for (const stop of this.stops.splice(0)) stop();
    this.clear();
  }

  private announced(event: MailboxEvent): void {
    const seq = Number(event.eventId);
    if (Number.isSafeInteger(seq)) this.raise(event.mailboxId, seq);
  }

  /** One read per mailbox at a time: concurrent polls of one mailbox share it. */
  private load(mailboxId: string, force = false): Promise<number | null> {
    const current = this.loading.get(mailboxId);
    if (current && !force) return current.promise;
    const loading: Loading = { promise: undefined as never, floor: -1, generation: this.generation };
    loading.promise = changeSequenceOfMailbox(this.db, mailboxId)
      .then((read) => {
        const seq = read === null ? null : Math.max(read, loading.floor);
        // Stored only if nothing was dropped meanwhile and the bus still listens.
        if (loading.generation === this.generation && this.bus.listening) this.store(mailboxId, seq);
        return seq;
      })
      .finally(() => {
        if (this.loading.get(mailboxId) === loading) this.loading.delete(mailboxId);
      });
    this.loading.set(mailboxId, loading);
    return loading.promise;
  }

  /** Never lowers a remembered sequence (two reads may complete out of order); null is a mailbox gone. */
  private store(mailboxId: string, seq: number | null): void {
    const known = this.entries.get(mailboxId)?.seq ?? null;
    this.entries.delete(mailboxId);
    const highest = seq !== null && known !== null && known > seq ? known : seq;
    this.entries.set(mailboxId, { seq: highest, at: performance.now() });
    if (this.entries.size > (this.options.maxEntries ?? 100_000))
      this.entries.delete(this.entries.keys().next().value!);
  }
}

/**
 * `bus` whose publish first raises this process's sequences: a change made here is never
 * answered "unchanged" by this process while its announcement travels through Redis and back.
 */
export function announcingLocally(bus: EventBus, sequences: ChangeSequences): EventBus {
  return {
    get listening() {
      return bus.listening;
    },
    publish: (events) => {
      sequences.published(events);
      return bus.publish(events);
    },
    subscribe: (listener) => bus.subscribe(listener),
    onResume: (listener) => bus.onResume(listener),
    close: () => bus.close(),
  };
}
