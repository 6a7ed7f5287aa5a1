import { encodeFeedCursor, type FeedPosition } from './event-feed.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';

/** An EventOccurrence (SEP-3415): `data` is the real-time event object, `cursor` the position after it. */
export interface EventOccurrence {
  eventId: string;
  name: string;
  timestamp: string;
  data: MailboxEvent;
  cursor: string;
}

/**
 * `eventId` is `<mailboxId>_<sequence>`, unique across mailboxes and the same as the `webhook-id`
 * of its webhook delivery (a receiver of both dedupes by one key).
 */
export const toOccurrence = (event: MailboxEvent): EventOccurrence => ({
  eventId: `${event.mailboxId}_${event.eventId}`,
  name: event.type,
  timestamp: new Date(event.occurredAtTs).toISOString(),
  data: event,
  cursor: encodeFeedCursor({ mailboxId: event.mailboxId, seq: Number(event.eventId) } satisfies FeedPosition),
});
