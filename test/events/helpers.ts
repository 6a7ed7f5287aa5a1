import { appendEvent } from '../../src/core/state/events/event-log.js';
import { type EventType, type MailboxEvent } from '../../src/types/mailbox-event.js';
import type { Services } from '../../src/core/services.js';

/**
 * Appends `count` events through the real appendEvent, one transaction each (as changes do),
 * and announces them on the bus unless `publish` is false (a lost announcement).
 */
export async function appendEvents(
  services: Services,
  mailboxId: string,
  count: number,
  o: { publish?: boolean; type?: EventType } = {},
): Promise<MailboxEvent[]> {
  const out: MailboxEvent[] = [];
  for (let i = 0; i < count; i++) {
    const event = await services.db.tx((trx) =>
      appendEvent(trx, mailboxId, o.type ?? 'message.read-state', { i }, services.clock.now()),
    );
    if (o.publish !== false) await services.bus.publish([event]);
    out.push(event);
  }
  return out;
}

export const seqs = (events: ReadonlyArray<{ eventId: string }>): number[] => events.map((e) => Number(e.eventId));

/** [from, to] inclusive. */
export const range = (from: number, to: number): number[] =>
  Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
