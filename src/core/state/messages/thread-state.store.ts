import { ms, sql, type Database, type Sql } from '../../../storage/database.js';
import type { Visibility } from '../../access/principal.js';
import type { ThreadState, ThreadSummary } from './thread-state.schemas.js';
import { lockMailboxRows } from '../mailboxes/mailbox.store.js';

export interface ThreadStateRow {
  id: string;
  mailbox_id: string;
  mailbox_address: string;
  subject: string;
  state: string;
  awaiting_reply_since: Date | string | null;
  follow_up_at: Date | string | null;
  follow_up_notified_at: Date | string | null;
  last_message_at: Date | string;
  created_at: Date | string;
}

const COLUMNS = sql`t.id, t.mailbox_id, mb.address as mailbox_address, t.subject, t.state, t.awaiting_reply_since,
  t.follow_up_at, t.follow_up_notified_at, t.last_message_at, t.created_at`;

export const toThreadSummary = (r: ThreadStateRow): ThreadSummary => ({
  threadId: r.id,
  mailboxId: r.mailbox_id,
  mailboxAddress: r.mailbox_address,
  subject: r.subject,
  state: r.state as ThreadState,
  awaitingReplySinceTs: ms(r.awaiting_reply_since),
  followUpAtTs: ms(r.follow_up_at),
  followUpNotifiedAtTs: ms(r.follow_up_notified_at),
  lastMessageAtTs: ms(r.last_message_at)!,
  createdAtTs: ms(r.created_at)!,
});

const visible = (v: Visibility) =>
  v.kind === 'mailbox' ? sql`t.mailbox_id = ${v.mailboxId}` : sql`mb.domain_id = ${v.domainId}`;

/** A thread the caller may see that still has a live message (a thread of deleted mail is gone). */
export async function visibleThread(
  db: Database,
  v: Visibility,
  threadId: string,
): Promise<ThreadStateRow | undefined> {
  return db.one(sql<ThreadStateRow>`select ${COLUMNS} from thread t join mailbox mb on mb.id = t.mailbox_id
    where t.id = ${threadId} and ${visible(v)}
      and exists(select 1 from message m where m.thread_id = t.id and m.deleted_at is null)`);
}

/** Threads of a mailbox, most recent activity first, keyset-paged (thread_state_list_idx / thread_list_idx). */
export async function threadPage(
  db: Database,
  mailboxId: string,
  state: ThreadState | undefined,
  after: { t: number; i: string } | null,
  limit: number,
): Promise<{ rows: ThreadStateRow[]; total: number }> {
  const byState = state ? sql`and t.state = ${state}` : sql``;
  const live = sql`exists(select 1 from message m where m.thread_id = t.id and m.deleted_at is null)`;
  const position = after ? sql`and (t.last_message_at, t.id) < (${new Date(after.t)}::timestamptz, ${after.i})` : sql``;
  const [rows, total] = await Promise.all([
    db.rows(sql<ThreadStateRow>`select ${COLUMNS} from thread t join mailbox mb on mb.id = t.mailbox_id
      where t.mailbox_id = ${mailboxId} ${byState} ${position} and ${live}
      order by t.last_message_at desc, t.id desc limit ${limit}`),
    db.one(sql<{ n: unknown }>`select count(*) as n from thread t
      where t.mailbox_id = ${mailboxId} ${byState} and ${live}`),
  ]);
  return { rows, total: Number(total?.n ?? 0) };
}

/**
 * Sets a thread's state. awaiting_reply keeps an earlier start of the wait, any other state ends
 * it. A given followUpAtTs (or null) replaces the follow-up and re-arms its one event.
 */
export async function writeThreadState(
  trx: Sql,
  threadId: string,
  state: ThreadState,
  followUpAt: Date | null | undefined,
  now: Date,
): Promise<ThreadStateRow> {
  const given = followUpAt !== undefined;
  const updated = await sql<ThreadStateRow>`update thread t set
      awaiting_reply_since = case when ${state}::text <> 'awaiting_reply' then null
        when state = 'awaiting_reply' then coalesce(awaiting_reply_since, ${now}) else ${now} end,
      state = ${state},
      follow_up_at = case when ${given}::boolean then ${followUpAt ?? null}::timestamptz else follow_up_at end,
      follow_up_notified_at = case when ${given}::boolean then null else follow_up_notified_at end
    from mailbox mb where t.id = ${threadId} and mb.id = t.mailbox_id
    returning ${COLUMNS}`.execute(trx);
  return updated.rows[0]!;
}

/** Threads still awaiting a reply whose follow-up time has passed and was not yet announced (a partial index). */
export async function dueFollowUps(
  db: Database,
  now: Date,
  limit: number,
): Promise<{ id: string; mailbox_id: string }[]> {
  return db.rows(sql<{ id: string; mailbox_id: string }>`select id, mailbox_id from thread
    where state = 'awaiting_reply' and follow_up_notified_at is null and follow_up_at <= ${now}
    order by follow_up_at limit ${limit}`);
}

/**
 * Claims one due follow-up: the conditional update marks it announced only while it is still due,
 * so of two workers racing for it one gets the row and the other nothing. Mailbox row first.
 */
export async function claimFollowUp(
  trx: Sql,
  threadId: string,
  mailboxId: string,
  now: Date,
): Promise<ThreadStateRow | undefined> {
  await lockMailboxRows(trx, [mailboxId]); // before the thread row: the lock order every writer keeps
  return (
    await sql<ThreadStateRow>`update thread t set follow_up_notified_at = ${now} from mailbox mb
      where t.id = ${threadId} and mb.id = t.mailbox_id and t.state = 'awaiting_reply'
        and t.follow_up_notified_at is null and t.follow_up_at <= ${now}
      returning t.id, t.mailbox_id, mb.address as mailbox_address, t.subject, t.state, t.awaiting_reply_since,
        t.follow_up_at, t.follow_up_notified_at, t.last_message_at, t.created_at`.execute(trx)
  ).rows[0];
}
