import type { Sql } from '../../../storage/database.js';
import { appendEventRow } from './event-log.store.js';
import type { EventType, MailboxEvent } from '../../../types/mailbox-event.js';

/**
 * Appends an event inside the caller's transaction (with its webhook deliveries, one statement:
 * appendEventRow). Taking the next per-mailbox sequence row-locks the mailbox, so a mailbox's
 * event ids are handed out in commit order and a replay by `lastEventId` can never skip an event
 * that commits late.
 */
export async function appendEvent(
  trx: Sql,
  mailboxId: string,
  type: EventType,
  data: Record<string, unknown>,
  at = new Date(),
): Promise<MailboxEvent> {
  const row = await appendEventRow(trx, mailboxId, type, at, data);
  if (!row) throw new Error(`mailbox ${mailboxId} vanished while appending an event`);
  return {
    eventId: String(row.event_seq),
    type,
    mailboxId,
    mailboxAddress: row.address,
    occurredAtTs: at.getTime(),
    data,
  };
}
