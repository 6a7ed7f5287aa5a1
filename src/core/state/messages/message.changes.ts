import { ms, type Sql } from '../../../storage/database.js';
import { appendEvent } from '../events/event-log.js';
import { type MailboxEvent } from '../../../types/mailbox-event.js';
import type { DeleteResult, ReadStateResult } from './message.schemas.js';
import { decrementMessageCounts, markDeleted, setReadState, type LockedRow } from './message.store.js';

/** Per-id results of one change over locked rows, plus the events it appended. */
export interface ChangeOutcome<T> {
  results: Map<string, T>;
  events: MailboxEvent[];
}

/**
 * Mailbox rows are locked (counters, event sequence) in mailbox-id order after the message
 * rows, so two transactions touching the same mailboxes never wait on each other in a cycle.
 */
const byMailboxThenId = (a: LockedRow, b: LockedRow): number =>
  a.mailbox_id < b.mailbox_id ? -1 : a.mailbox_id > b.mailbox_id ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/**
 * Sets the read flag of the live rows among `rows`; soft-deleted rows get no result (not found).
 * A row already in the wanted state is answered as it is, keeps its first readAtTs and appends
 * no event: events announce changes, and a retried call must not fan out again.
 */
export async function applyReadState(
  trx: Sql,
  rows: readonly LockedRow[],
  isRead: boolean,
  now: Date,
): Promise<ChangeOutcome<ReadStateResult>> {
  const results = new Map<string, ReadStateResult>();
  const events: MailboxEvent[] = [];
  const live = rows.filter((r) => r.deleted_at === null);
  const changing = live.filter((r) => r.is_read !== isRead);
  const readAt = isRead ? now : null;
  if (changing.length > 0) {
    await setReadState(
      trx,
      changing.map((r) => r.id),
      isRead,
      readAt,
    );
  }
  for (const r of live) {
    results.set(
      r.id,
      r.is_read === isRead
        ? { messageId: r.id, isRead: r.is_read, readAtTs: ms(r.read_at) }
        : { messageId: r.id, isRead, readAtTs: readAt ? readAt.getTime() : null },
    );
  }
  for (const r of [...changing].sort(byMailboxThenId)) {
    events.push(
      await appendEvent(trx, r.mailbox_id, 'message.read-state', { ...results.get(r.id)!, threadId: r.thread_id }, now),
    );
  }
  return { results, events };
}

/**
 * Soft-deletes the rows not yet deleted and decrements their mailbox's counter for that
 * direction in the same transaction, so totalCount stays exact. Rows deleted before answer
 * alreadyDeleted with their original deletedAtTs and append nothing.
 */
export async function applySoftDelete(
  trx: Sql,
  rows: readonly LockedRow[],
  now: Date,
): Promise<ChangeOutcome<DeleteResult>> {
  const results = new Map<string, DeleteResult>();
  const events: MailboxEvent[] = [];
  const fresh = rows.filter((r) => r.deleted_at === null).sort(byMailboxThenId);
  for (const r of rows) {
    if (r.deleted_at !== null)
      results.set(r.id, { messageId: r.id, deletedAtTs: ms(r.deleted_at)!, alreadyDeleted: true });
  }
  if (fresh.length === 0) return { results, events };

  await markDeleted(
    trx,
    fresh.map((r) => r.id),
    now,
  );
  const perMailbox = new Map<string, { inbound: number; outbound: number }>();
  for (const r of fresh) {
    const counts = perMailbox.get(r.mailbox_id) ?? { inbound: 0, outbound: 0 };
    counts[r.direction] += 1;
    perMailbox.set(r.mailbox_id, counts);
  }
  // Map iteration keeps insertion order, which is mailbox-id order because `fresh` is sorted.
  // A deleted message gives its stored bytes back to the storage quota (docs/api.md, "Storage
  // quota"): it leaves every read at once; its blobs stay as long as a row names them.
  for (const [mailboxId, c] of perMailbox) {
    await decrementMessageCounts(
      trx,
      mailboxId,
      c,
      fresh.filter((r) => r.mailbox_id === mailboxId).map((r) => r.id),
    );
  }
  for (const r of fresh) {
    const result: DeleteResult = { messageId: r.id, deletedAtTs: now.getTime(), alreadyDeleted: false };
    results.set(r.id, result);
    events.push(
      await appendEvent(
        trx,
        r.mailbox_id,
        'message.deleted',
        { messageId: r.id, threadId: r.thread_id, direction: r.direction, deletedAtTs: result.deletedAtTs },
        now,
      ),
    );
  }
  return { results, events };
}
