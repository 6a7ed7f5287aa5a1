import { sql, type Sql } from '../../storage/database.js';
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
  const seqRow = (
    await sql<{
      event_seq: string | number;
      address: string;
      domain_id: string;
    }>`update mailbox set event_seq = event_seq + 1
    where id = ${mailboxId} returning event_seq, address, domain_id`.execute(trx)
  ).rows[0];
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
  await sql`insert into mailbox_event (mailbox_id, seq, type, occurred_at, payload)
    values (${mailboxId}, ${seq}, ${type}, ${at}, ${JSON.stringify(event)}::jsonb)`.execute(trx);
  // Same transaction: the webhook outbox holds exactly the committed events (docs/api.md, "Webhooks").
  await enqueueWebhookDeliveries(trx, event, seqRow.domain_id, at);
  return event;
}
