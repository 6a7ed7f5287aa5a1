import { encodeFeedCursor, EventFeed, type FeedPosition } from '../../../core/state/events/event-feed.js';
import { subscriptionKey } from '../../../core/state/events/event.service.js';
import type { Services } from '../../../core/services.js';
import type { EventType } from '../../../types/mailbox-event.js';
import { EVENT_ERROR } from './errors.js';
import { toOccurrence } from '../../../core/state/events/event-occurrence.js';

const BATCH = 200;
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/** Who watches what: the event type and the mailbox, resolved by the tools' rule (MailboxRead). */
export interface ResolvedSubscription {
  type: EventType;
  types: ReadonlySet<EventType>;
  from: FeedPosition;
  tokenId: string;
}

export interface StreamSink {
  signal: AbortSignal;
  subscriptionId: string | number;
  notify(method: string, params: Record<string, unknown>): Promise<void>;
}

/**
 * Holds one events/stream open until the client goes away or the token stops being valid.
 * The bus only says "look now" (storage/event-bus.ts); every delivery is read from the log after
 * the stream's position, so a lost, repeated or reordered announcement can neither drop nor
 * repeat an occurrence, and mail written through any replica reaches a stream held on any other.
 * The heartbeat re-reads the log too (a bus that stays silent cannot stall a stream for long)
 * and re-checks the token the way the real-time hub does.
 */
export async function holdStream(services: Services, sub: ResolvedSubscription, sink: StreamSink): Promise<void> {
  const feed = new EventFeed(services.events);
  // Heartbeat (with the cursor) at least this often, re-checking the token as it goes.
  const HEARTBEAT_MS = services.config.MCP_EVENTS_HEARTBEAT;
  const meta = { [SUBSCRIPTION_ID]: sink.subscriptionId };
  let position: FeedPosition = sub.from;
  let wake: (() => void) | undefined;
  let pending: boolean; // set at the top of each read; the bus sets it meanwhile
  const ring = () => {
    pending = true;
    wake?.();
  };
  const offBus = services.bus.subscribe((event) => {
    if (event.mailboxId === position.mailboxId) ring();
  });
  const offResume = services.bus.onResume(ring);
  const onAbort = () => wake?.();
  sink.signal.addEventListener('abort', onAbort);
  try {
    let first = true;
    let lastBeat = Date.now();
    while (!sink.signal.aborted) {
      pending = false; // an announcement during the read rings again
      const page = await feed.read(position, sub.types, BATCH);
      position = page.next;
      if (first || page.truncated)
        await sink.notify('notifications/events/active', {
          cursor: encodeFeedCursor(position),
          truncated: page.truncated,
          _meta: meta,
        });
      first = false;
      for (const event of page.events)
        await sink.notify('notifications/events/event', { ...toOccurrence(event), _meta: meta });
      if (page.hasMore) continue;
      if (Date.now() - lastBeat >= HEARTBEAT_MS) {
        lastBeat = Date.now();
        await sink.notify('notifications/events/heartbeat', { cursor: encodeFeedCursor(position), _meta: meta });
      }
      if (!pending) {
        const waitMs = Math.max(0, HEARTBEAT_MS - (Date.now() - lastBeat));
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      if (sink.signal.aborted) break;
      if (Date.now() - lastBeat >= HEARTBEAT_MS) {
        const key = { tokenId: sub.tokenId, mailboxId: position.mailboxId };
        if (!(await services.events.stillAuthorized([key])).has(subscriptionKey(key))) {
          await sink.notify('notifications/events/terminated', {
            error: { code: EVENT_ERROR.forbidden, message: 'The token is no longer valid for this mailbox.' },
            _meta: meta,
          });
          return;
        }
      }
    }
  } finally {
    offBus();
    offResume();
    sink.signal.removeEventListener('abort', onAbort);
  }
}
