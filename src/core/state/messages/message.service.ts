import { z } from 'zod';
import { ms, type Database, type Sql } from '../../../storage/database.js';
import { AppError, notFound } from '../../base/errors.js';
import type { Principal } from '../../access/principal.js';
import { requireScope, resolveMailbox } from '../../access/access.js';
import type { Scope } from '../../access/scopes.js';
import type { EventBus } from '../../../storage/event-bus.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import type { CursorCodec, Page } from '../../base/paging/cursor.js';
import type { Clock } from '../../base/time.js';
import { assertTargetMailbox, targetVisibility } from './message.access.js';
import type { ChangeMarks, Marked } from './change-mark.js';
import type { ChangeSequences } from './change-sequence.js';
import { applyReadState, applySoftDelete, type ChangeOutcome } from './message.changes.js';
import {
  attachmentsOf,
  findMessage,
  findThread,
  lockMessages,
  pageStatement,
  pendingApprovalCount,
  recipientsOf,
  scheduledCount,
  threadMessages,
  totalOf,
  type DetailRow,
  type LockedRow,
  type PageFilter,
  type PageRow,
  type SummaryRow,
} from './message.store.js';
import { byMessage, toDetail, toSummary } from './message.views.js';
import { heldCount } from '../screening/screening.store.js';

/**
 * Who may see inbound mail held by screening: whoever may release it (docs/screening.md), a
 * mailbox token granted MailboxApprove or a domain token (which holds every scope). Agents never.
 */
const mayReviewHeld = (principal: Principal): boolean => principal.scopes.has('MailboxApprove');

/** How a read treats held mail: `agent` never shows it; `reviewer` shows it to those who may release it. */
export type HeldReader = 'agent' | 'reviewer';
import type {
  BulkDeleteInput,
  BulkReadStateInput,
  BulkResult,
  DeleteResult,
  ListMessagesInput,
  MessageDetail,
  MessageRefInput,
  MessageSummary,
  ReadStateInput,
  ReadStateResult,
  ThreadRefInput,
  ThreadView,
} from './message.schemas.js';

/**
 * The one filter of a list besides direction. `status` is a list of its own: combined with
 * `approval` or `screening` it is a 400 rather than a guess at which was meant. (`approval` with
 * `screening` lists the pending approvals, as before `status` existed.)
 */
function pageFilterOf(input: ListMessagesInput): PageFilter {
  if (input.status === 'scheduled') {
    if (input.approval || input.screening)
      throw new AppError('VALIDATION_FAILED', 'status: cannot be combined with approval or screening');
    return 'scheduled';
  }
  return input.approval === 'pending' ? 'pending' : input.screening === 'held' ? 'held' : 'none';
}

/** A keyset position: created_at in Unix ms and the id that breaks ties. */
const positionSchema = z.object({ t: z.number().int().min(0).max(8.64e15), i: z.string().min(1).max(200) }).strict();

/**
 * Read side of messages: list, get, thread, read state, soft delete. Every public method takes
 * (principal, input) and returns the wire shape, so HTTP and MCP call the same rules. Scope,
 * mailbox resolution and visibility are decided here, never in a channel.
 */
export class MessageService {
  constructor(
    protected readonly db: Database,
    protected readonly bus: EventBus,
    protected readonly cursors: CursorCodec,
    protected readonly clock: Clock,
    protected readonly marks: ChangeMarks,
    protected readonly sequences: ChangeSequences,
  ) {}

  /** GET /api/messages: newest first, keyset-paged; totalCount from the mailbox counters. */
  async list(principal: Principal, input: ListMessagesInput): Promise<Page<MessageSummary>> {
    return (await this.listMarked(principal, input, '')).value;
  }

  /**
   * The list unless the caller already holds its current mark (`holds`: HTTP If-None-Match, MCP
   * ifChangedSince); `value` null means unchanged. The mark is read first only for a caller that
   * holds one; otherwise the page brings its own mark (one round trip), which may still match where
   * this process's memory of the sequence was behind.
   */
  async listUnlessUnchanged(
    principal: Principal,
    input: ListMessagesInput,
    request: string,
    holds?: (mark: string) => boolean,
  ): Promise<{ mark: string; value: Page<MessageSummary> | null }> {
    if (holds) {
      const mark = await this.marks.of(principal, 'mailbox', input.mailboxAddress, request);
      if (holds(mark)) return { mark, value: null };
    }
    const { value, mark } = await this.listMarked(principal, input, request);
    return { mark, value: holds?.(mark) ? null : value };
  }

  /**
   * The list and its change mark for `request` (ChangeMarks.of), in one round trip: the page
   * query returns the mailbox's change sequence of the same snapshot as the rows.
   */
  async listMarked(
    principal: Principal,
    input: ListMessagesInput,
    request: string,
  ): Promise<Marked<Page<MessageSummary>>> {
    requireScope(principal, 'MailboxRead');
    const filter = pageFilterOf(input);
    // The held list is a reviewer's: only a caller that may release held mail sees it.
    if (input.screening === 'held') requireScope(principal, 'MailboxApprove');
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    // The scope binds a cursor to its mailbox and filter: replaying it elsewhere is a 400.
    const scope = `messages:${mailbox.id}:${input.direction ?? 'all'}${filter === 'none' ? '' : `:${filter}`}`;
    const after = input.cursor ? this.cursors.decode(scope, input.cursor, positionSchema) : null;
    const pageRows = await this.db.rows(
      pageStatement(this.db.db, mailbox.id, input.direction, after, input.limit + 1, filter),
    );
    const totalCount =
      filter === 'held'
        ? await heldCount(this.db.db, mailbox.id)
        : filter === 'pending'
          ? await pendingApprovalCount(this.db.db, mailbox.id)
          : filter === 'scheduled'
            ? input.direction === 'inbound'
              ? 0
              : await scheduledCount(this.db.db, mailbox.id)
            : totalOf(pageRows[0], input.direction);
    const rows = pageRows.filter((r): r is PageRow & SummaryRow => r.id !== null);
    const page = rows.slice(0, input.limit);
    const last = page[page.length - 1];
    const sequence = pageRows[0] ? Number(pageRows[0].event_seq) : null;
    if (sequence !== null) this.sequences.raise(mailbox.id, sequence);
    // Held mail arrives without an event (nobody is told of it live, docs/screening.md), so the
    // mailbox's sequence does not move when the held list does: its mark also names the list's
    // size and newest row, or a reviewer's cached list would be answered 304 while it grew.
    const heldState = filter === 'held' ? `:held:${totalCount}:${page[0]?.id ?? ''}` : '';
    return {
      value: {
        items: page.map((r) => toSummary(r, mailbox.address)),
        nextCursor:
          rows.length > input.limit && last
            ? this.cursors.encode(scope, { t: ms(last.created_at)!, i: last.id })
            : null,
        totalCount,
      },
      mark: this.marks.ofSequence(principal, mailbox.id, sequence, request + heldState),
    };
  }

  /** A write on a message naming `mailboxAddress` must name the message's mailbox (message.access.ts). */
  assertTargetMailbox(principal: Principal, messageId: string, mailboxAddress: string | undefined): Promise<void> {
    return assertTargetMailbox(this.db, principal, messageId, mailboxAddress);
  }

  /**
   * GET /api/messages/{messageId}: a soft-deleted message is a 404, and so is held mail to an
   * agent's read (MCP) and to a caller that may not release it (docs/screening.md).
   */
  async get(principal: Principal, input: MessageRefInput, reader: HeldReader = 'agent'): Promise<MessageDetail> {
    requireScope(principal, 'MailboxRead');
    const visibility = await targetVisibility(this.db, principal, input.mailboxAddress);
    const row = await findMessage(this.db.db, visibility, input.messageId);
    if (!row || row.deleted_at !== null) throw notFound('Message');
    if (row.screening_held && !(reader === 'reviewer' && mayReviewHeld(principal))) throw notFound('Message');
    return (await this.details([row]))[0]!;
  }

  /**
   * Where the raw source named by rawContentPath lives, for the channel that streams it from the
   * blob store: same scope, visibility and soft-delete rules as `get`; no raw source is a 404.
   */
  async rawContentLocation(
    principal: Principal,
    input: MessageRefInput,
  ): Promise<{ messageId: string; blobKey: string }> {
    requireScope(principal, 'MailboxRead');
    const visibility = await targetVisibility(this.db, principal, input.mailboxAddress);
    const row = await findMessage(this.db.db, visibility, input.messageId);
    if (!row || row.deleted_at !== null || !row.raw_blob_key) throw notFound('Raw message');
    if (row.screening_held && !mayReviewHeld(principal)) throw notFound('Raw message');
    return { messageId: row.id, blobKey: row.raw_blob_key };
  }

  /** GET /api/threads/{threadId}: live messages oldest first; a thread with none left is a 404. */
  async getThread(principal: Principal, input: ThreadRefInput): Promise<ThreadView> {
    requireScope(principal, 'MailboxRead');
    const visibility = await targetVisibility(this.db, principal, input.mailboxAddress);
    const thread = await findThread(this.db.db, visibility, input.threadId);
    if (!thread) throw notFound('Thread');
    const rows = await threadMessages(this.db.db, visibility, thread.id);
    if (rows.length === 0) throw notFound('Thread');
    return {
      threadId: thread.id,
      mailboxId: thread.mailbox_id,
      subject: thread.subject,
      createdAtTs: ms(thread.created_at)!,
      state: thread.state as ThreadView['state'],
      awaitingReplySinceTs: ms(thread.awaiting_reply_since),
      followUpAtTs: ms(thread.follow_up_at),
      messages: await this.details(rows),
    };
  }

  /** PUT /api/messages/{messageId}/read-state (scope MailboxRead, as the spec says). */
  async setReadState(principal: Principal, input: ReadStateInput): Promise<ReadStateResult> {
    const result = await this.bulkSetReadState(principal, {
      ids: [input.messageId],
      isRead: input.isRead,
      mailboxAddress: input.mailboxAddress,
    });
    return single(result);
  }

  async bulkSetReadState(principal: Principal, input: BulkReadStateInput): Promise<BulkResult<ReadStateResult>> {
    return this.bulk(principal, 'MailboxRead', input, (trx, rows, now) => applyReadState(trx, rows, input.isRead, now));
  }

  /** DELETE /api/messages/{messageId}: soft delete; again answers alreadyDeleted with the first deletedAtTs. */
  async delete(principal: Principal, input: MessageRefInput): Promise<DeleteResult> {
    return single(await this.bulkDelete(principal, { ids: [input.messageId], mailboxAddress: input.mailboxAddress }));
  }

  async bulkDelete(principal: Principal, input: BulkDeleteInput): Promise<BulkResult<DeleteResult>> {
    return this.bulk(principal, 'MailboxDelete', input, (trx, rows, now) => applySoftDelete(trx, rows, now));
  }

  /**
   * One transaction for the whole call: lock the visible rows, change them, append their events;
   * publish only after commit. Duplicate ids collapse, so requestedCount counts distinct ids and
   * equals succeeded + failed. An id that is unknown, foreign or (for read state) deleted fails with 404.
   */
  private async bulk<T>(
    principal: Principal,
    scope: Scope,
    input: { ids: readonly string[]; mailboxAddress?: string | undefined },
    apply: (trx: Sql, rows: LockedRow[], now: Date) => Promise<ChangeOutcome<T>>,
  ): Promise<BulkResult<T>> {
    requireScope(principal, scope);
    const visibility = await targetVisibility(this.db, principal, input.mailboxAddress);
    const ids = [...new Set(input.ids)];
    const now = this.clock.now();
    const { results, events } = await this.db.tx(async (trx) =>
      apply(trx, await lockMessages(trx, visibility, ids), now),
    );
    await this.publish(events);
    const out: BulkResult<T> = { requestedCount: ids.length, succeededItems: [], failedItems: [] };
    for (const id of ids) {
      const result = results.get(id);
      if (result) out.succeededItems.push(result);
      else out.failedItems.push({ messageId: id, code: 404, errMsg: 'Message not found.' });
    }
    return out;
  }

  /** The event log already holds the events; a lost publish is healed by replay, never a failed call. */
  private async publish(events: readonly MailboxEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.bus.publish(events).catch(() => undefined);
  }

  /** Details of many messages with two batched look-ups (recipients, attachments). */
  private async details(rows: readonly DetailRow[]): Promise<MessageDetail[]> {
    // Only look up what can exist: recipients of outbound mail, attachments where counted.
    const ids = rows.filter((r) => r.attachment_count > 0).map((r) => r.id);
    const outboundIds = rows.filter((r) => r.direction === 'outbound').map((r) => r.id);
    const [recipients, attachments] = await Promise.all([
      recipientsOf(this.db.db, outboundIds),
      attachmentsOf(this.db.db, ids),
    ]);
    const recipientsBy = byMessage(recipients);
    const attachmentsBy = byMessage(attachments);
    return rows.map((r) => toDetail(r, recipientsBy.get(r.id), attachmentsBy.get(r.id)));
  }
}

/** A one-id bulk call as the single call's answer: its result, or its failure as the error. */
function single<T>(result: BulkResult<T>): T {
  const item = result.succeededItems[0];
  if (!item) throw notFound('Message');
  return item;
}
