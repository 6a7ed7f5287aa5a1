import { createQueryId, sql, type CompiledQuery, type Sql } from '../../../storage/database.js';
import type { Col, Narrow, Row } from '../../../storage/rows.js';
import type { Visibility } from '../../access/principal.js';
import type { Direction } from './message.schemas.js';
import type { SenderFilter } from './message-trust.js';

/** Columns of a summary; bodies stay out of list pages. */
export type SummaryRow = Narrow<
  Row<
    'message',
    | 'id'
    | 'mailbox_id'
    | 'thread_id'
    | 'direction'
    | 'subject'
    | 'from_address'
    | 'from_display_name'
    | 'to_addresses'
    | 'attachment_count'
    | 'is_read'
    | 'read_at'
    | 'created_at'
    | 'received_at'
    | 'sent_at'
    | 'approval_status'
    | 'send_at'
  >,
  { direction: Direction }
> & {
  /** The DMARC result word of external mail; null for internal mail (no verdicts stored). */
  external_dmarc: string | null;
  /** Whether verdicts are stored: the message arrived on port 25 (docs/contract.md: origin `external`). */
  is_external: boolean;
  /** Inbound screening (jsonb; absent where a query does not select it, null for outbound and older mail). */
  screening?: unknown;
  screening_held?: boolean;
  /** Internal, or external with DMARC passed (message-trust.ts). */
  is_authenticated: boolean;
  /** The snippet stored when the message was written (null for rows written before the column). */
  snippet: string | null;
  /** The start of the text body, read only where `snippet` is null (SNIPPET_COLUMNS). */
  snippet_text: string | null;
};

/** What a row's SPF/DKIM/DMARC columns hold (see auth-verdict.ts); null for internal mail. */
export interface AuthenticationRow {
  spf: string | null;
  dkim: string[] | null;
  dmarc: string | null;
}

export type DetailRow = SummaryRow &
  Row<
    'message',
    | 'cc_addresses'
    | 'bcc_addresses'
    | 'body_text'
    | 'body_html'
    | 'body_format'
    | 'raw_blob_key'
    | 'in_reply_to_message_id'
    | 'delivery_status'
    | 'deleted_at'
    /** jsonb: an object on pg, text-parsed by the view where a driver returns a string. */
    | 'extracted'
  > & {
    owner_address: Col<'mailbox', 'address'>;
    auth_spf: string | null;
    auth_dkim: string[] | null;
  };

export type RecipientRow = Row<
  'message_recipient',
  'message_id' | 'address' | 'kind' | 'status' | 'remote_reply' | 'attempts' | 'updated_at' | 'delivered_at'
>;

export type AttachmentRow = Narrow<
  Row<'attachment', 'id' | 'message_id' | 'filename' | 'content_type' | 'size_bytes' | 'content_id' | 'disposition'>,
  { message_id: string }
>;

export type ThreadRow = Row<
  'thread',
  'id' | 'mailbox_id' | 'subject' | 'created_at' | 'state' | 'awaiting_reply_since' | 'follow_up_at'
>;

/** "Authenticated" in SQL: internal, or DMARC passed (the rule of message-trust.ts). */
export const AUTHENTICATED_SQL = sql`(m.auth_results is null or m.auth_results #>> '{dmarc,result}' = 'pass')`;

/** The summary columns that carry trust, from `m` (read by trustOfRow). */
export const TRUST_COLUMNS = sql`m.auth_results is not null as is_external, m.auth_results #>> '{dmarc,result}' as external_dmarc,
  ${AUTHENTICATED_SQL} as is_authenticated`;

/** The SQL condition of a sender filter over `m.from_address`. */
export function senderMatchSql(f: SenderFilter) {
  if ('address' in f) return sql`lower(m.from_address) = ${f.address}`;
  const host = sql`substring(lower(m.from_address) from '@([^@]*)$')`;
  return sql`(${host} = ${f.domain} or right(${host}, ${f.domain.length + 1}) = ${`.${f.domain}`})`;
}

/**
 * The stored snippet; the body's start only for a row written before snippets were stored, so a
 * list page does not read 50 bodies (one page of 10 KB bodies: 0.26 → 0.78 ms with left()).
 */
export const SNIPPET_COLUMNS = sql`m.snippet, case when m.snippet is null then left(m.body_text, 400) end as snippet_text`;

/** The screening of a summary (docs/screening.md), from m. */
export const SCREENING_COLUMNS = sql`m.screening, m.screening_held`;

/** Every read of a summary selects these (origin and authenticated come from TRUST_COLUMNS). */
export const SUMMARY_COLUMNS = sql`m.id, m.mailbox_id, m.thread_id, m.direction, m.subject, m.from_address, m.from_display_name,
  m.to_addresses, m.attachment_count, m.is_read, m.read_at, m.created_at, m.received_at, m.sent_at, ${TRUST_COLUMNS},
  m.approval_status, m.send_at, ${SCREENING_COLUMNS}, ${SNIPPET_COLUMNS}`;

/** Which inbound mail a read shows: what agents read (held mail left out), or only the held mail. */
export type HeldFilter = 'hide' | 'only';
export const heldPredicate = (f: HeldFilter) => (f === 'only' ? sql`m.screening_held` : sql`not m.screening_held`);
// raw_blob_key here is the source the raw route serves: an outbound message's as it left when the
// delivery worker stored one, else what was received or submitted over 587.
const DETAIL_COLUMNS = sql`${SUMMARY_COLUMNS}, mb.address as owner_address, m.cc_addresses, m.bcc_addresses, m.body_text,
  m.body_html, m.body_format, coalesce(m.sent_raw_blob_key, m.raw_blob_key) as raw_blob_key, m.in_reply_to_message_id, m.delivery_status, m.deleted_at, m.extracted,
  m.auth_results #>> '{spf,result}' as auth_spf,
  (select array_agg(d ->> 'result') from jsonb_array_elements(m.auth_results -> 'dkim') d) as auth_dkim`;

/**
 * The caller's visibility as a predicate over `mb` (the owning mailbox joined as `mb`). Every
 * query below takes one, so a row of another mailbox or domain is simply not found.
 */
export function visible(v: Visibility) {
  return v.kind === 'mailbox'
    ? sql`mb.id = ${v.mailboxId}`
    : sql`mb.domain_id = ${v.domainId} and mb.disabled_at is null`;
}

export interface PagePosition {
  t: number;
  i: string;
}

/**
 * A page row: the summary columns (null on the one row of an empty page), the mailbox counters
 * and its change sequence (the list's change mark, in the same snapshot as the rows).
 */
export type PageRow = { [K in keyof SummaryRow]: SummaryRow[K] | null } & Row<
  'mailbox',
  'inbound_count' | 'outbound_count' | 'event_seq'
> & { held_count: number | string };

/**
 * What a page lists besides direction: every live message, those awaiting approval
 * (`approval=pending`), inbound mail held by screening (`screening=held`), or outbound mail
 * waiting for its sendAt (`status=scheduled`).
 */
export type PageFilter = 'none' | 'pending' | 'held' | 'scheduled';

/**
 * One keyset page, newest first, the mailbox counters for totalCount and its change sequence, in
 * one round trip.
 * The inner predicates match the partial indexes message_list_idx / message_list_dir_idx exactly
 * (mailbox [, direction], created_at desc, id desc where not deleted and not held); `held` reads
 * message_held_idx, `pending` message_approval_idx and `scheduled` message_scheduled_idx (outbound
 * mail is never held, so those two need no held predicate), and the row comparison is an index
 * condition, so a page is one index range scan whatever the mailbox size. An empty page still
 * yields one row (the counters, summary columns null).
 */
export function pageQuery(
  mailboxId: string,
  direction: Direction | undefined,
  after: PagePosition | null,
  limit: number,
  filter: PageFilter = 'none',
) {
  const only =
    filter === 'pending'
      ? sql`and m.approval_status = 'pending'`
      : filter === 'scheduled'
        ? sql`and m.delivery_status = 'scheduled'`
        : sql`and ${heldPredicate(filter === 'held' ? 'only' : 'hide')}`;
  // held_count (message_held_idx) takes held mail out of totalCount.
  return sql<PageRow>`select mb.inbound_count, mb.outbound_count, mb.event_seq,
      (select count(*) from message h where h.mailbox_id = mb.id and h.screening_held and h.deleted_at is null) as held_count,
      p.* from mailbox mb left join lateral (
      select ${SUMMARY_COLUMNS} from message m
      where m.mailbox_id = mb.id and m.deleted_at is null ${only}
        ${direction ? sql`and m.direction = ${direction}` : sql``}
        ${after ? sql`and (m.created_at, m.id) < (${new Date(after.t)}::timestamptz, ${after.i}::varchar)` : sql``}
      order by m.created_at desc, m.id desc
      limit ${limit}) p on true
    where mb.id = ${mailboxId}`;
}

/** Where compiling with marker values put each value of a page (statement.parameters' indexes). */
interface PageStatement {
  compiled: CompiledQuery<PageRow>;
  mailboxAt: number;
  limitAt: number;
  afterAt: { t: number; i: number } | null;
}

const MARK = { mailbox: '\0mailbox', limit: -1, t: -2, i: '\0after' } as const;
const pageStatements = new WeakMap<Sql, Map<string, PageStatement>>();

/**
 * pageQuery compiled once per shape (direction, cursor or not, filter) for `compiler`: compiling
 * walks the whole template on every call, and the same text object (rather than an equal new
 * string) is a cheap key for StatementNames. The SQL and the order of its values are pageQuery's.
 */
export function pageStatement(
  compiler: Sql,
  mailboxId: string,
  direction: Direction | undefined,
  after: PagePosition | null,
  limit: number,
  filter: PageFilter = 'none',
): CompiledQuery<PageRow> {
  let shapes = pageStatements.get(compiler);
  if (!shapes) pageStatements.set(compiler, (shapes = new Map()));
  const shape = `${direction ?? ''}:${after ? 'after' : ''}:${filter}`;
  let statement = shapes.get(shape);
  if (!statement) {
    statement = compilePage(compiler, direction, after !== null, filter);
    shapes.set(shape, statement);
  }
  const parameters = [...statement.compiled.parameters];
  parameters[statement.mailboxAt] = mailboxId;
  parameters[statement.limitAt] = limit;
  if (after && statement.afterAt) {
    parameters[statement.afterAt.t] = new Date(after.t);
    parameters[statement.afterAt.i] = after.i;
  }
  return { ...statement.compiled, parameters, queryId: createQueryId() };
}

function compilePage(
  compiler: Sql,
  direction: Direction | undefined,
  after: boolean,
  filter: PageFilter,
): PageStatement {
  const compiled = pageQuery(
    MARK.mailbox,
    direction,
    after ? { t: MARK.t, i: MARK.i } : null,
    MARK.limit,
    filter,
  ).compile(compiler);
  const only = (found: (v: unknown) => boolean) => {
    const at = compiled.parameters.flatMap((v, i) => (found(v) ? [i] : []));
    if (at.length !== 1) throw new Error(`pageStatement: a marker value bound ${at.length} times`);
    return at[0]!;
  };
  return {
    compiled,
    mailboxAt: only((v) => v === MARK.mailbox),
    limitAt: only((v) => v === MARK.limit),
    afterAt: after
      ? { t: only((v) => v instanceof Date && v.getTime() === MARK.t), i: only((v) => v === MARK.i) }
      : null,
  };
}

/** How many messages of a mailbox await approval (totalCount of the `approval=pending` filter). */
export async function pendingApprovalCount(db: Sql, mailboxId: string): Promise<number> {
  const row = (
    await sql<{ n: number }>`select count(*)::int as n from message
    where mailbox_id = ${mailboxId} and approval_status = 'pending' and deleted_at is null`.execute(db)
  ).rows[0];
  return row?.n ?? 0;
}

/** How many scheduled sends of a mailbox have not left (totalCount of `status=scheduled`; message_scheduled_idx). */
export async function scheduledCount(db: Sql, mailboxId: string): Promise<number> {
  const row = (
    await sql<{ n: number }>`select count(*)::int as n from message
    where mailbox_id = ${mailboxId} and delivery_status = 'scheduled' and deleted_at is null`.execute(db)
  ).rows[0];
  return row?.n ?? 0;
}

/** totalCount from one page row's counters, for the direction filter; held inbound mail is not counted. */
export function totalOf(row: PageRow | undefined, direction: Direction | undefined): number {
  if (!row) return 0;
  const inbound = Math.max(Number(row.inbound_count) - Number(row.held_count), 0);
  const outbound = Number(row.outbound_count);
  return direction === 'inbound' ? inbound : direction === 'outbound' ? outbound : inbound + outbound;
}

/** A message the caller may see, live or soft-deleted (the caller decides what deleted means). */
export async function findMessage(db: Sql, v: Visibility, messageId: string): Promise<DetailRow | undefined> {
  return (
    await sql<DetailRow>`select ${DETAIL_COLUMNS} from message m join mailbox mb on mb.id = m.mailbox_id
    where m.id = ${messageId} and ${visible(v)}`.execute(db)
  ).rows[0];
}

/** The mailbox a visible message (live or deleted) belongs to. */
export async function messageMailboxId(db: Sql, v: Visibility, messageId: string): Promise<string | undefined> {
  return (
    await sql<{ mailbox_id: string }>`select m.mailbox_id from message m join mailbox mb on mb.id = m.mailbox_id
    where m.id = ${messageId} and ${visible(v)}`.execute(db)
  ).rows[0]?.mailbox_id;
}

export type LockedRow = Narrow<
  Row<'message', 'id' | 'mailbox_id' | 'thread_id' | 'direction' | 'is_read' | 'read_at' | 'deleted_at'>,
  { direction: Direction }
>;

/**
 * Row-locks the visible messages among `ids` in id order, so concurrent bulk calls over
 * overlapping ids take their locks in the same order and cannot deadlock.
 */
export async function lockMessages(trx: Sql, v: Visibility, ids: readonly string[]): Promise<LockedRow[]> {
  return (
    await sql<LockedRow>`select m.id, m.mailbox_id, m.thread_id, m.direction, m.is_read, m.read_at, m.deleted_at
    from message m join mailbox mb on mb.id = m.mailbox_id
    where m.id = any(${ids}::varchar[]) and ${visible(v)}
    order by m.id for update of m`.execute(trx)
  ).rows;
}

export async function findThread(db: Sql, v: Visibility, threadId: string): Promise<ThreadRow | undefined> {
  return (
    await sql<ThreadRow>`select t.id, t.mailbox_id, t.subject, t.created_at, t.state, t.awaiting_reply_since, t.follow_up_at from thread t join mailbox mb on mb.id = t.mailbox_id
    where t.id = ${threadId} and ${visible(v)}`.execute(db)
  ).rows[0];
}

/** The live messages of a thread, oldest first (message_thread_idx). */
export async function threadMessages(db: Sql, v: Visibility, threadId: string): Promise<DetailRow[]> {
  return (
    await sql<DetailRow>`select ${DETAIL_COLUMNS} from message m join mailbox mb on mb.id = m.mailbox_id
    where m.thread_id = ${threadId} and m.deleted_at is null and not m.screening_held and ${visible(v)}
    order by m.created_at, m.id`.execute(db)
  ).rows;
}

export async function recipientsOf(db: Sql, messageIds: readonly string[]): Promise<RecipientRow[]> {
  if (messageIds.length === 0) return [];
  return (
    await sql<RecipientRow>`select message_id, address, kind, status, remote_reply, attempts, updated_at, delivered_at
    from message_recipient where message_id = any(${messageIds}::varchar[])
    order by message_id, case kind when 'to' then 0 when 'cc' then 1 else 2 end, id`.execute(db)
  ).rows;
}

export async function attachmentsOf(db: Sql, messageIds: readonly string[]): Promise<AttachmentRow[]> {
  if (messageIds.length === 0) return [];
  return (
    await sql<AttachmentRow>`select id, message_id, filename, content_type, size_bytes, content_id, disposition from attachment
    where message_id = any(${messageIds}::varchar[]) order by message_id, created_at, id`.execute(db)
  ).rows;
}

/** Sets the read flag (and read time) of the messages `ids`. */
export async function setReadState(
  trx: Sql,
  ids: readonly string[],
  isRead: boolean,
  readAt: Date | null,
): Promise<void> {
  await sql`update message set is_read = ${isRead}, read_at = ${readAt}
      where id = any(${[...ids]}::varchar[])`.execute(trx);
}

/** Soft-deletes the messages `ids` at `at`. */
export async function markDeleted(trx: Sql, ids: readonly string[], at: Date): Promise<void> {
  await sql`update message set deleted_at = ${at} where id = any(${[...ids]}::varchar[])`.execute(trx);
}

/**
 * Lowers a mailbox's message counters and its storage use by the stored bytes of the messages
 * `deletedIds` (never below zero).
 */
export async function decrementMessageCounts(
  trx: Sql,
  mailboxId: string,
  by: { inbound: number; outbound: number },
  deletedIds: readonly string[],
): Promise<void> {
  await sql`update mailbox set inbound_count = greatest(inbound_count - ${by.inbound}, 0),
      outbound_count = greatest(outbound_count - ${by.outbound}, 0),
      storage_used_bytes = greatest(storage_used_bytes - (select coalesce(sum(stored_bytes), 0) from message
        where id = any(${[...deletedIds]}::varchar[])), 0)
      where id = ${mailboxId}`.execute(trx);
}
