import type { Sql } from '../../storage/database.js';
import { insertEvent, nextEventSeq } from './event-log.store.js';
import { enqueueWebhookDeliveries } from '../webhooks/webhook-outbox.store.js';
import type { EventType, MailboxEvent } from '../../types/mailbox-event.js';

/**
 * Appends an event inside the caller's transaction. Taking the next per-mailbox sequence
 * row-locks the mailbox, so a mailbox's event ids are handed out in commit order and a replay
 * by `lastEventId` can never skip an event that commits late.
 */
export async function appendEvent(
  trx: Sql,
  mailboxId: string,
  type: EventType,
  data: Record<string, unknown>,
  at = new Date(),
): Promise<MailboxEvent> {
  const seqRow = await nextEventSeq(trx, mailboxId);
  if (!seqRow) throw new Error(`mailbox ${mailboxId} vanished while appending an event`);
  const seq = Number(seqRow.event_seq);
  const event: MailboxEvent = {
    eventId: String(seq),
    type,
    mailboxId,
    mailboxAddress: seqRow.address,
    occurredAtTs: at.getTime(),
    data,
  };
  await insertEvent(trx, mailboxId, seq, type, at, event);
  // Same transaction: the webhook outbox holds exactly the committed events (docs/api.md, "Webhooks").
  await enqueueWebhookDeliveries(trx, event, seqRow.domain_id, at);
  return event;
}
