import { jsonValue, num, type Database } from '../../../storage/database.js';
import { requireScope, resolveMailbox } from '../../access/access.js';
import type { MailboxRef, Principal } from '../../access/principal.js';
import type { Clock } from '../../base/time.js';
import {
  authorizedPairs,
  deleteEventsBefore,
  deleteEventsBeyondCap,
  eventHeads,
  eventsAfter,
  oldestEventSeq,
} from './event-log.store.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import type { EventPage, ListEventsInput } from './event.schemas.js';

export interface EventServiceOptions {
  /** Events older than this are removed by the sweeper (EVENT_RETENTION). */
  retentionMs: number;
  /** At most this many newest events are kept per mailbox (EVENT_RETENTION_MAX_PER_MAILBOX). */
  maxPerMailbox: number;
}

export interface ReplayResult {
  /** Events after `after`, oldest first, at most `limit`. */
  events: MailboxEvent[];
  /**
   * The log can no longer prove it holds every event after `after` (retention removed some, or
   * `after` is ahead of the mailbox's sequence): the reader must refetch its state and continue
   * from `headSeq`. Never answered as an empty page, which would be a silent gap.
   */
  resyncRequired: boolean;
  /** The mailbox's newest event id when the read began. */
  headSeq: number;
  /** With resyncRequired: the oldest id the log still holds (null: none). Otherwise not looked up (null). */
  oldestSeq: number | null;
  hasMore: boolean;
}

/** A connected subscriber, re-checked while it stays connected. */
export interface Subscription {
  tokenId: string;
  mailboxId: string;
}

const BATCH = 5000;

/**
 * The event log as every channel reads it: HTTP `GET /api/events`, the real-time hub's replay and
 * gap filling, and the retention sweeper. Sequences are per mailbox, contiguous and handed out
 * in commit order (see appendEvent), which is what lets "first retained id ≠ after + 1" mean
 * "retention removed something" rather than "not committed yet".
 */
export class EventService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly options: EventServiceOptions,
  ) {}

  /** GET /api/events: MailboxRead and the same mailbox rules as the message list. */
  async list(principal: Principal, input: ListEventsInput): Promise<EventPage> {
    const mailbox = await this.openSubscription(principal, input.mailboxAddress);
    const r = await this.replay(mailbox, input.after ?? null, input.limit);
    const oldest = r.resyncRequired ? r.oldestSeq : await this.oldestRetained(mailbox.id);
    const last = r.events.at(-1);
    return {
      items: r.events,
      lastEventId: String(last ? Number(last.eventId) : r.resyncRequired ? r.headSeq : (input.after ?? 0)),
      hasMore: r.hasMore,
      resyncRequired: r.resyncRequired,
      oldestEventId: oldest === null ? null : String(oldest),
      headEventId: String(r.headSeq),
    };
  }

  /**
   * The mailbox a reader may follow: needs MailboxRead; a mailbox token defaults to its own
   * mailbox (naming another is a 400), a domain token must name one of its domain (400/404).
   */
  async openSubscription(principal: Principal, mailboxAddress: string | undefined | null): Promise<MailboxRef> {
    requireScope(principal, 'MailboxRead');
    return resolveMailbox(this.db, principal, mailboxAddress);
  }

  /**
   * Events after `after` (null: from the oldest retained). The head is read before the events:
   * every id up to it is committed, so a missing `after + 1` below the head was removed.
   */
  async replay(mailbox: MailboxRef | string, after: number | null, limit: number): Promise<ReplayResult> {
    const mailboxId = typeof mailbox === 'string' ? mailbox : mailbox.id;
    const headSeq = await this.head(mailboxId);
    if (after !== null && after > headSeq) {
      // An id this mailbox never issued (another installation, a restored database): the
      // reader's state cannot be trusted, and waiting for the sequence to pass it would drop events.
      return {
        events: [],
        resyncRequired: true,
        headSeq,
        oldestSeq: await this.oldestRetained(mailboxId),
        hasMore: false,
      };
    }
    const rows = await eventsAfter(this.db, mailboxId, after ?? 0, limit + 1);
    const first = rows[0] ? num(rows[0].seq) : null;
    if (after !== null && after < headSeq && first !== after + 1) {
      return {
        events: [],
        resyncRequired: true,
        headSeq,
        oldestSeq: first ?? (await this.oldestRetained(mailboxId)),
        hasMore: false,
      };
    }
    const page = rows.slice(0, limit).map((r) => jsonValue(r.payload) as MailboxEvent);
    return { events: page, resyncRequired: false, headSeq, oldestSeq: null, hasMore: rows.length > limit };
  }

  /** The oldest event id still retained for a mailbox, null when none is. */
  async oldestRetained(mailboxId: string): Promise<number | null> {
    const seq = await oldestEventSeq(this.db, mailboxId);
    return seq === null ? null : num(seq);
  }

  /** The newest event id a mailbox has issued (0 before its first event). */
  async head(mailboxId: string): Promise<number> {
    return (await this.heads([mailboxId])).get(mailboxId) ?? 0;
  }

  /** Heads of many mailboxes in one query (the hub's periodic "did the bus miss anything"). */
  async heads(mailboxIds: readonly string[]): Promise<Map<string, number>> {
    if (mailboxIds.length === 0) return new Map();
    const rows = await eventHeads(this.db, mailboxIds);
    return new Map(rows.map((r) => [r.id, num(r.event_seq)]));
  }

  /**
   * Which subscriptions may stay open, in one query: the token validity rule of
   * TokenAuthenticator.authenticate in its SQL form (`validTokenSql`, tokens/token.store.ts) plus
   * the followed mailbox still enabled and still the token's to read. Disable, delete and expiry all
   * show up here without hooking each path.
   */
  async stillAuthorized(subscriptions: readonly Subscription[]): Promise<Set<string>> {
    if (subscriptions.length === 0) return new Set();
    const tokenIds = [...new Set(subscriptions.map((s) => s.tokenId))];
    const mailboxIds = [...new Set(subscriptions.map((s) => s.mailboxId))];
    const rows = await authorizedPairs(this.db, tokenIds, mailboxIds, this.clock.now());
    return new Set(rows.map((r) => subscriptionKey({ tokenId: r.token_id, mailboxId: r.mailbox_id })));
  }

  /**
   * Retention: removes events older than the age limit, then those beyond the per-mailbox count
   * cap, in batches so no statement holds locks for long. Readers behind the cut get a resync.
   */
  async sweep(): Promise<{ byAge: number; byCount: number }> {
    const cutoff = new Date(this.clock.now().getTime() - this.options.retentionMs);
    const cap = this.options.maxPerMailbox;
    let byAge = 0;
    let byCount = 0;
    for (let n = BATCH; n === BATCH; byAge += n) {
      n = await deleteEventsBefore(this.db, cutoff, BATCH);
    }
    for (let n = BATCH; n === BATCH; byCount += n) {
      n = await deleteEventsBeyondCap(this.db, cap, BATCH);
    }
    return { byAge, byCount };
  }
}

export const subscriptionKey = (s: Subscription): string => `${s.tokenId} ${s.mailboxId}`;
