import { encodeFeedCursor, type FeedPosition } from '../../../core/events/event-feed.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { webhookMessageId } from '../../../core/webhooks/webhook-sender.js';

/** An EventOccurrence (SEP-3415): `data` is the real-time event object, `cursor` the position after it. */
export interface EventOccurrence {
  eventId: string;
  name: string;
  timestamp: string;
  data: MailboxEvent;
  cursor: string;
}

/** `eventId` is the webhook-id our webhooks use, unique across mailboxes: receivers dedupe either by it. */
export const toOccurrence = (event: MailboxEvent): EventOccurrence => ({
  eventId: webhookMessageId(event),
  name: event.type,
  timestamp: new Date(event.occurredAtTs).toISOString(),
  data: event,
  cursor: encodeFeedCursor({ mailboxId: event.mailboxId, seq: Number(event.eventId) } satisfies FeedPosition),
});
