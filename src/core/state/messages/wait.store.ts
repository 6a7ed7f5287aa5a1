import { num, sql, type Database } from '../../../storage/database.js';
import type { EventType } from '../../../types/mailbox-event.js';
import type { Direction } from './message.schemas.js';
import { AUTHENTICATED_SQL, senderMatchSql, SUMMARY_COLUMNS, type SummaryRow } from './message.store.js';
import type { SenderFilter } from './message-trust.js';

export interface MessageFilter {
  /** A sender address or domain (message-trust.ts). */
  from: SenderFilter | null;
  /** Lower-cased substring of the subject. */
  subject: string | null;
  /** Only internal mail and external mail whose DMARC passed. */
  requireAuthenticated: boolean;
}

export interface WaitFilter extends MessageFilter {
  direction: Direction;
}

/** The event that announces a new message of each direction. */
export const ARRIVAL_EVENT: Record<Direction, EventType> = { inbound: 'message.received', outbound: 'message.sent' };

const matching = (f: MessageFilter) =>
  sql`${f.from === null ? sql`` : sql`and ${senderMatchSql(f.from)}`}
      ${f.subject === null ? sql`` : sql`and strpos(lower(m.subject), ${f.subject}) > 0`}
      ${f.requireAuthenticated ? sql`and ${AUTHENTICATED_SQL}` : sql``}`;

/**
 * The first arrival event in (since, upTo] whose message still exists and matches the filter.
 * The event log orders arrivals (a mailbox's sequence is handed out in commit order, see
 * appendEvent); the message row decides the match, so a message deleted meanwhile is skipped.
 * One range scan of the (mailbox_id, seq) primary key plus a lookup per candidate.
 */
export async function firstArrival(
  db: Database,
  mailboxId: string,
  since: number,
  upTo: number,
  f: WaitFilter,
): Promise<(SummaryRow & { seq: number }) | undefined> {
  const row = await db.one(sql<SummaryRow & { seq: string | number }>`select e.seq, ${SUMMARY_COLUMNS}
    from mailbox_event e
    join message m on m.id = e.payload #>> '{data,messageId}' and m.mailbox_id = e.mailbox_id
    where e.mailbox_id = ${mailboxId} and e.seq > ${since}::bigint and e.seq <= ${upTo}::bigint
      and e.type = ${ARRIVAL_EVENT[f.direction]} and m.direction = ${f.direction} and m.deleted_at is null
      and not m.screening_held
      ${matching(f)}
    order by e.seq
    limit 1`);
  return row ? { ...row, seq: num(row.seq) } : undefined;
}

/**
 * The newest live inbound message since `since` that has a one-time code and matches the filter
 * (get_verification_code). A scan of message_list_dir_idx bounded by `since`.
 */
export async function newestWithCode(
  db: Database,
  mailboxId: string,
  since: Date,
  f: MessageFilter,
): Promise<(SummaryRow & { extracted: unknown }) | undefined> {
  return db.one(sql<SummaryRow & { extracted: unknown }>`select ${SUMMARY_COLUMNS}, m.extracted
    from message m
    where m.mailbox_id = ${mailboxId} and m.direction = 'inbound' and m.deleted_at is null
      and not m.screening_held
      and m.created_at >= ${since}::timestamptz
      and jsonb_array_length(coalesce(m.extracted -> 'codes', '[]'::jsonb)) > 0
      ${matching(f)}
    order by m.created_at desc, m.id desc
    limit 1`);
}
