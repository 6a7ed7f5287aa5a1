import type { MailboxRef } from '../../access/principal.js';
import { AppError } from '../../base/errors.js';
import type { EventType, MailboxEvent } from '../../../types/mailbox-event.js';
import type { EventService } from './event.service.js';

/**
 * A position in one mailbox's event log for one reader: the last sequence it has seen. Opaque on
 * the wire (`encodeFeedCursor`), bound to the mailbox so a cursor of another mailbox is refused
 * rather than read as a position in this one.
 */
export interface FeedPosition {
  mailboxId: string;
  seq: number;
}

export interface FeedPage {
  /** Events of the wanted types after the position, oldest first. */
  events: MailboxEvent[];
  /** Where the next read continues: past the last event scanned, wanted or not. */
  next: FeedPosition;
  /** The log no longer held every event after the position (retention): some were skipped. */
  truncated: boolean;
  /** More events are already in the log after `next`. */
  hasMore: boolean;
}

const PREFIX = 'ev1.';

export const encodeFeedCursor = (p: FeedPosition): string =>
  PREFIX + Buffer.from(`${p.mailboxId}:${p.seq}`, 'utf8').toString('base64url');

/** The position of a cursor for `mailboxId`; a cursor that is malformed or of another mailbox is a 400. */
export function decodeFeedCursor(cursor: string, mailboxId: string): FeedPosition {
  const bad = () => new AppError('VALIDATION_FAILED', 'cursor: not a cursor this server issued for this mailbox');
  if (!cursor.startsWith(PREFIX) || cursor.length > 200) throw bad();
  const text = Buffer.from(cursor.slice(PREFIX.length), 'base64url').toString('utf8');
  const at = text.lastIndexOf(':');
  const seq = Number(text.slice(at + 1));
  if (at <= 0 || text.slice(0, at) !== mailboxId || !Number.isSafeInteger(seq) || seq < 0) throw bad();
  return { mailboxId, seq };
}

/**
 * Reads a mailbox's log as a typed feed. No gap and no duplicate: sequences are contiguous and
 * handed out in commit order (appendEvent), so "after seq" is exact; when retention removed part
 * of what follows the position, the page says `truncated` and continues with what is retained.
 */
export class EventFeed {
  constructor(private readonly events: EventService) {}

  /** The position "now": the mailbox's newest event (a null cursor starts here). */
  async head(mailbox: MailboxRef): Promise<FeedPosition> {
    return { mailboxId: mailbox.id, seq: await this.events.head(mailbox.id) };
  }

  async read(from: FeedPosition, types: ReadonlySet<EventType>, limit: number): Promise<FeedPage> {
    let after = from.seq;
    let truncated = false;
    let r = await this.events.replay(from.mailboxId, after, limit);
    if (r.resyncRequired) {
      truncated = true;
      // Continue with the oldest event still held, or at the head when the cursor is ahead of it.
      after = r.oldestSeq !== null && after < r.headSeq ? r.oldestSeq - 1 : r.headSeq;
      r = await this.events.replay(from.mailboxId, after, limit);
    }
    const last = r.events.at(-1);
    return {
      events: r.events.filter((e) => types.has(e.type)),
      next: { mailboxId: from.mailboxId, seq: last ? Number(last.eventId) : after },
      truncated,
      hasMore: r.hasMore,
    };
  }
}
