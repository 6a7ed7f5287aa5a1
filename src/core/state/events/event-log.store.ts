import { hotRow, sql, type Database, type Sql, type SqlFragment } from '../../../storage/database.js';
import type { Col, Row } from '../../../storage/rows.js';
import { validTokenSql } from '../../access/token.store.js';
import type { EventType, MailboxEvent } from '../../../types/mailbox-event.js';

/** The queries of the event log (mailbox_event) and of the mailboxes' event sequences. */

/**
 * Appends an event in one statement: takes the mailbox's next event sequence (row-locking the
 * mailbox), stores the event under it and queues one webhook delivery per webhook that wants it
 * (same transaction: the webhook outbox holds exactly the committed events, docs/api.md
 * "Webhooks"). The payload is built here from the sequence and address the update returns: one
 * round trip instead of three on every write path (bench/smtp). Undefined for a mailbox that is gone.
 */
export async function appendEventRow(
  trx: Sql,
  mailboxId: string,
  type: EventType,
  at: Date,
  data: Record<string, unknown>,
): Promise<Row<'mailbox', 'event_seq' | 'address'> | undefined> {
  return (
    await hotRow(sql<Row<'mailbox', 'event_seq' | 'address'>>`with next as (
        update mailbox set event_seq = event_seq + 1 where id = ${mailboxId} returning event_seq, address, domain_id),
      event as (select next.*, jsonb_build_object('eventId', next.event_seq::text, 'type', ${type}::text,
        'mailboxId', ${mailboxId}::text, 'mailboxAddress', next.address, 'occurredAtTs', ${at.getTime()}::int8,
        'data', ${JSON.stringify(data)}::jsonb) as payload from next),
      stored as (insert into mailbox_event (mailbox_id, seq, type, occurred_at, payload)
        select ${mailboxId}, event.event_seq, ${type}, ${at}, event.payload from event),
      queued as (insert into webhook_delivery (webhook_id, mailbox_id, seq, payload, status, attempts, next_attempt_at, created_at)
        select wanted.id, ${mailboxId}, event.event_seq, event.payload, 'pending', 0, ${at}, ${at}
        from event, lateral (${webhooksWanting(sql`event.domain_id`, mailboxId, type)}) wanted)
    select event_seq, address from next`).execute(trx)
  ).rows[0];
}

/** Up to `limit` events of a mailbox after sequence `after`, oldest first; jsonb is parsed on pg, text on PGlite. */
export async function eventsAfter(
  db: Database,
  mailboxId: string,
  after: number,
  limit: number,
): Promise<{ seq: Col<'mailbox_event', 'seq'>; payload: MailboxEvent | string }[]> {
  return db.rows(sql<{
    seq: Col<'mailbox_event', 'seq'>;
    payload: MailboxEvent | string;
  }>`select seq, payload from mailbox_event
      where mailbox_id = ${mailboxId} and seq > ${after} order by seq limit ${limit}`);
}

/** The lowest sequence still retained for a mailbox (null when none is). */
export async function oldestEventSeq(db: Database, mailboxId: string): Promise<Col<'mailbox_event', 'seq'> | null> {
  const row = await db.one(
    sql<{
      seq: Col<'mailbox_event', 'seq'> | null;
    }>`select min(seq) as seq from mailbox_event where mailbox_id = ${mailboxId}`,
  );
  return row?.seq ?? null;
}

/** The event sequence of each of `mailboxIds` (those that exist). */
export async function eventHeads(
  db: Database,
  mailboxIds: readonly string[],
): Promise<Row<'mailbox', 'id' | 'event_seq'>[]> {
  return db.rows(
    sql<
      Row<'mailbox', 'id' | 'event_seq'>
    >`select id, event_seq from mailbox where id = any(${[...mailboxIds]}::text[])`,
  );
}

/**
 * The (token, mailbox) pairs among `tokenIds` x `mailboxIds` where the token is valid at `now`
 * (`validTokenSql`) and the mailbox enabled and readable with it.
 */
export async function authorizedPairs(
  db: Database,
  tokenIds: readonly string[],
  mailboxIds: readonly string[],
  now: Date,
): Promise<{ token_id: string; mailbox_id: string }[]> {
  return db.rows(sql<{
    token_id: Col<'access_token', 'id'>;
    mailbox_id: Col<'mailbox', 'id'>;
  }>`select t.id as token_id, m.id as mailbox_id
      from access_token t join domain d on d.id = t.domain_id left join mailbox tm on tm.id = t.mailbox_id
      join mailbox m on m.id = any(${[...mailboxIds]}::text[]) and m.disabled_at is null and m.domain_id = t.domain_id
        and (t.kind = 'domain' or t.mailbox_id = m.id)
      where t.id = any(${[...tokenIds]}::text[]) and ${validTokenSql(now)}`);
}

/** Deletes up to `batch` events that occurred before `cutoff`; how many went. */
export async function deleteEventsBefore(db: Database, cutoff: Date, batch: number): Promise<number> {
  return (
    await db.rows(sql`delete from mailbox_event where (mailbox_id, seq) in (select mailbox_id, seq from mailbox_event
        where occurred_at < ${cutoff} limit ${batch}) returning 1`)
  ).length;
}

/** Deletes up to `batch` events older than the newest `cap` of their mailbox; how many went. */
export async function deleteEventsBeyondCap(db: Database, cap: number, batch: number): Promise<number> {
  return (
    await db.rows(sql`delete from mailbox_event where (mailbox_id, seq) in (select e.mailbox_id, e.seq
        from mailbox m join mailbox_event e on e.mailbox_id = m.id and e.seq <= m.event_seq - ${cap}
        where m.event_seq > ${cap} limit ${batch}) returning 1`)
  ).length;
}

/**
 * The live webhooks (as `w`) that want an event of `type` in `mailboxId` of the domain
 * `domainId` (an SQL expression): same domain, its own mailbox (mailbox webhooks) or any of its
 * listed mailboxes, and one of its event types. With no webhook in the domain this is one probe
 * of webhook_domain_live_idx.
 * The event log owns this fan-out: appendEventRow inserts one delivery row per match in the
 * statement that appends the event (the webhook outbox reads those rows), and webhooksWant asks
 * the same question to decide whether an announced event is worth waking the webhook worker.
 */
function webhooksWanting(domainId: SqlFragment, mailboxId: string, type: string) {
  return sql`select w.id from webhook w
    where w.domain_id = ${domainId} and w.disabled_at is null
      and (w.mailbox_id is null or w.mailbox_id = ${mailboxId})
      and (w.mailbox_ids is null or ${mailboxId} = any(w.mailbox_ids))
      and (w.event_types is null or ${type} = any(w.event_types))`;
}

/** Whether some live webhook wants an event of `type` in `mailboxId`: appendEventRow's fan-out, asked alone. */
export async function webhooksWant(db: Database, mailboxId: string, type: string): Promise<boolean> {
  const domainOf = sql`(select domain_id from mailbox where id = ${mailboxId})`;
  const row = await db.one(
    sql<{ wanted: boolean }>`select exists (${webhooksWanting(domainOf, mailboxId, type)}) as wanted`,
  );
  return row?.wanted === true;
}
