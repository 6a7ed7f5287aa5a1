import { z } from 'zod';
import { AppError, notFound } from '../../base/errors.js';
import type { Database } from '../../../storage/database.js';
import type { Principal } from '../../access/principal.js';
import { requireScope, resolveMailbox, visibilityOf } from '../../access/access.js';
import type { CursorCodec, Page } from '../../base/paging/cursor.js';
import type { Clock } from '../../base/time.js';
import { ms } from '../../../storage/database.js';
import type { EventBus } from '../../../storage/event-bus.js';
import type { Logger } from '../../base/logger.js';
import { appendEvent } from '../events/event-log.js';
import { lockMailboxRows } from '../mailboxes/mailbox.store.js';
import type { ListThreadsInput, SetThreadStateBody, ThreadSummary } from './thread-state.schemas.js';
import { threadPage, toThreadSummary, visibleThread, writeThreadState } from './thread-state.store.js';

const positionSchema = z.object({ t: z.number().int().min(0).max(8.64e15), i: z.string().min(1).max(200) }).strict();

/** Thread workflow state: list by state, set by hand (docs/workflow.md, "Thread state"). */
export class ThreadStateService {
  constructor(
    private readonly db: Database,
    private readonly cursors: CursorCodec,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly log: Logger,
  ) {}

  /** GET /api/threads, MCP list_threads: most recent activity first, paged like messages. */
  async list(principal: Principal, input: ListThreadsInput): Promise<Page<ThreadSummary>> {
    requireScope(principal, 'MailboxRead');
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    // The scope binds a cursor to its mailbox and filter: replaying it elsewhere is a 400.
    const scope = `threads:${mailbox.id}:${input.state ?? 'all'}`;
    const after = input.cursor ? this.cursors.decode(scope, input.cursor, positionSchema) : null;
    const { rows, total } = await threadPage(this.db, mailbox.id, input.state, after, input.limit + 1);
    const page = rows.slice(0, input.limit);
    const last = page[page.length - 1];
    return {
      items: page.map(toThreadSummary),
      nextCursor:
        rows.length > input.limit && last
          ? this.cursors.encode(scope, { t: ms(last.last_message_at)!, i: last.id })
          : null,
      totalCount: total,
    };
  }

  /**
   * PUT /api/threads/{threadId}/state, MCP set_thread_state. MailboxSend, because the state steers
   * what an agent sends next. The thread must be visible (404); a domain token names the thread's
   * mailbox with mailboxAddress (docs/contract.md, "Domain tokens on a mailbox's objects").
   */
  async setState(principal: Principal, threadId: string, input: SetThreadStateBody): Promise<ThreadSummary> {
    requireScope(principal, 'MailboxSend');
    const thread = await visibleThread(this.db, visibilityOf(principal), threadId);
    if (!thread) throw notFound('Thread');
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    // The rule of every write on one mailbox's object (message.access.ts, assertTargetMailbox).
    if (mailbox.id !== thread.mailbox_id) throw new AppError('TARGET_MAILBOX_MISMATCH');
    const followUpAt =
      input.followUpAtTs === undefined ? undefined : input.followUpAtTs === null ? null : new Date(input.followUpAtTs);
    const now = this.clock.now();
    // With its event, which also moves the mailbox's change sequence: a cached GET of the thread is stale now.
    const { summary, event } = await this.db.tx(async (trx) => {
      await lockMailboxRows(trx, [thread.mailbox_id]);
      const row = await writeThreadState(trx, thread.id, input.state, followUpAt, now);
      const { mailboxAddress: _omit, ...data } = toThreadSummary(row);
      return {
        summary: toThreadSummary(row),
        event: await appendEvent(trx, thread.mailbox_id, 'thread.state-changed', data, now),
      };
    });
    await this.bus.publish([event]).catch((err) => this.log.warn('events.publish_failed', { err }));
    return summary;
  }
}
