import type { ChangeMarks } from '../messages/change-mark.js';
import { z } from 'zod';
import { ms, type Database, type Sql } from '../../../storage/database.js';
import type { EventBus } from '../../../storage/event-bus.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { AppError, notFound } from '../../base/errors.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import type { Logger } from '../../base/logger.js';
import type { CursorCodec, Page } from '../../base/paging/cursor.js';
import type { Clock } from '../../base/time.js';
import type { MailboxRef, Principal } from '../../access/principal.js';
import { requireScope, resolveMailbox, visibilityOf } from '../../access/access.js';
import { targetVisibility } from '../messages/message.access.js';
import { appendEvent } from '../events/event-log.js';
import { lockMailboxRows } from '../mailboxes/mailbox.store.js';
import type {
  CreateDraftInput,
  Draft,
  DraftContent,
  DraftDeleted,
  DraftRefInput,
  DraftSummary,
  ListDraftsInput,
  UpdateDraftInput,
} from './draft.schemas.js';
import {
  deleteDraft,
  deleteSentDraft,
  draftAttachments,
  draftPage,
  holdUploads,
  insertDraft,
  liveMessageMailbox,
  updateDraft,
  visibleDraft,
  type DraftColumns,
  type DraftRow,
} from './draft.store.js';
import { draftEventData, toDraft, toDraftSummary } from './draft.views.js';

/** A keyset position: created_at in Unix ms and the id that breaks ties (as for messages). */
const positionSchema = z.object({ t: z.number().int().min(0).max(8.64e15), i: z.string().min(1).max(200) }).strict();

/**
 * Drafts (docs/workflow.md, "Drafts"): what a send takes, kept in one mailbox until it is sent
 * or deleted, possibly incomplete. Reading needs MailboxRead; writing needs MailboxSend, because a
 * draft is an unsent send. Visibility is that of messages: a mailbox token sees its mailbox's
 * drafts, a domain token its domain's, anything else is a 404. Each change appends its event
 * (draft.created, draft.updated, draft.deleted) in its transaction. Sending is a flow
 * (flows/sending/draft-send.ts); it removes the draft with `removeSent`.
 */
export class DraftService {
  constructor(
    private readonly db: Database,
    private readonly cursors: CursorCodec,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    private readonly log: Logger,
    private readonly marks: ChangeMarks,
  ) {}

  /** POST /api/drafts, MCP create_draft (201). A reply draft's parent must be a live message of the mailbox. */
  async create(principal: Principal, input: CreateDraftInput): Promise<Draft> {
    requireScope(principal, 'MailboxSend');
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    const columns = applyChange(EMPTY, input);
    await this.checkParent(principal, mailbox, columns.parentMessageId);
    const id = newId(ID_PREFIX.draft, this.clock.now().getTime());
    const at = this.clock.now();
    return this.write(mailbox.id, id, 'draft.created', at, async (trx) => {
      await insertDraft(trx, { ...columns, id, mailboxId: mailbox.id, tokenId: principal.tokenId, at });
      await holdUploads(trx, mailbox.id, id, input.attachmentIds ?? []);
    });
  }

  /**
   * The list unless the caller holds its current change mark (`holds`: HTTP If-None-Match); `value`
   * null means unchanged. Every draft write appends a `draft.*` event, which moves the mailbox's
   * sequence, so the mark read before the page covers it.
   */
  async listUnlessUnchanged(
    principal: Principal,
    input: ListDraftsInput,
    request: string,
    holds?: (mark: string) => boolean,
  ): Promise<{ mark: string; value: Page<DraftSummary> | null }> {
    const mark = await this.marks.of(principal, 'mailbox', input.mailboxAddress, request);
    if (holds?.(mark)) return { mark, value: null };
    return { mark, value: await this.list(principal, input) };
  }

  /** GET /api/drafts, MCP list_drafts: newest first, keyset-paged like GET /api/messages. */
  async list(principal: Principal, input: ListDraftsInput): Promise<Page<DraftSummary>> {
    requireScope(principal, 'MailboxRead');
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    // The scope binds a cursor to its mailbox: replaying it on another list is a 400.
    const scope = `drafts:${mailbox.id}`;
    const after = input.cursor ? this.cursors.decode(scope, input.cursor, positionSchema) : null;
    const { rows, total } = await draftPage(this.db, mailbox.id, after, input.limit + 1);
    const page = rows.slice(0, input.limit);
    const attachments = await draftAttachments(
      this.db.db,
      page.map((r) => r.id),
    );
    const last = page[page.length - 1];
    return {
      items: page.map((r) => toDraftSummary(r, attachments)),
      nextCursor:
        rows.length > input.limit && last ? this.cursors.encode(scope, { t: ms(last.created_at)!, i: last.id }) : null,
      totalCount: total,
    };
  }

  /** GET /api/drafts/{draftId}: a mailboxAddress given narrows what the caller sees, as for a message. */
  async get(principal: Principal, input: DraftRefInput): Promise<Draft> {
    requireScope(principal, 'MailboxRead');
    const row = await visibleDraft(
      this.db,
      await targetVisibility(this.db, principal, input.mailboxAddress),
      input.draftId,
    );
    if (!row) throw notFound('Draft');
    return toDraft(row, await draftAttachments(this.db.db, [row.id]));
  }

  /**
   * PATCH /api/drafts/{draftId}, MCP update_draft: absent fields are kept, null clears one, a list
   * replaces the list. Answers the draft as it is now.
   */
  async update(principal: Principal, draftId: string, input: UpdateDraftInput): Promise<Draft> {
    requireScope(principal, 'MailboxSend');
    const row = await this.target(principal, draftId, input.mailboxAddress);
    if (!row) throw notFound('Draft');
    const { mailboxAddress: _address, ...change } = input;
    const columns = applyChange(columnsOf(row), change);
    if (columns.parentMessageId !== row.parent_message_id)
      await this.checkParent(principal, { id: row.mailbox_id }, columns.parentMessageId);
    return this.write(row.mailbox_id, row.id, 'draft.updated', this.clock.now(), async (trx, at) => {
      await updateDraft(trx, row.id, columns, at);
      if (input.attachmentIds !== undefined) await holdUploads(trx, row.mailbox_id, row.id, input.attachmentIds);
    });
  }

  /**
   * DELETE /api/drafts/{draftId}, MCP delete_draft. A hard delete, as for tokens and webhooks:
   * the uploads it held become plain unclaimed uploads again, and a second delete is a 404.
   */
  async delete(principal: Principal, input: DraftRefInput): Promise<DraftDeleted> {
    requireScope(principal, 'MailboxSend');
    const row = await this.target(principal, input.draftId, input.mailboxAddress);
    if (!row) throw notFound('Draft');
    const at = this.clock.now();
    const event = await this.db.tx(async (trx) => {
      await lockMailboxRows(trx, [row.mailbox_id]);
      if (!(await deleteDraft(trx, row.id))) throw notFound('Draft');
      return appendEvent(
        trx,
        row.mailbox_id,
        'draft.deleted',
        { draftId: row.id, reason: 'deleted', messageId: null },
        at,
      );
    });
    await this.publish(event);
    return { draftId: row.id, deleted: true };
  }

  /**
   * The draft a write names, if the caller sees it (undefined otherwise). A mailboxAddress given
   * must name its mailbox: the rule of every write on one mailbox's object (400
   * TARGET_MAILBOX_MISMATCH; docs/contract.md, "Domain tokens on a mailbox's objects").
   */
  async target(
    principal: Principal,
    draftId: string,
    mailboxAddress: string | undefined,
  ): Promise<DraftRow | undefined> {
    const named = mailboxAddress ? await resolveMailbox(this.db, principal, mailboxAddress) : null;
    const row = await visibleDraft(this.db, visibilityOf(principal), draftId);
    if (row && named && named.id !== row.mailbox_id) throw new AppError('TARGET_MAILBOX_MISMATCH');
    return row;
  }

  /** The uploads a draft holds, as a send names them. */
  async attachmentIdsOf(draftId: string): Promise<string[]> {
    return (await draftAttachments(this.db.db, [draftId])).map((a) => a.id);
  }

  /**
   * Inside the transaction of the send a draft became, after the message: removes the draft as the
   * send read it (`revision`), with its `draft.deleted` event (reason `sent`, the message's id).
   * Another write in between is 409 DRAFT_CHANGED, a draft gone meanwhile a 404: the send then
   * rolls back. The send holds the mailbox row already (its storage charge); it is taken here too,
   * so the lock order of every draft write (mailbox first) holds whatever the caller did.
   */
  async removeSent(trx: Sql, row: DraftRow, messageId: string, at: Date): Promise<MailboxEvent> {
    await lockMailboxRows(trx, [row.mailbox_id]);
    const outcome = await deleteSentDraft(trx, row.id, row.revision);
    if (outcome === 'changed') throw new AppError('DRAFT_CHANGED');
    if (outcome === 'gone') throw notFound('Draft');
    return appendEvent(trx, row.mailbox_id, 'draft.deleted', { draftId: row.id, reason: 'sent', messageId }, at);
  }

  /** Publishes an event appended in a committed transaction. */
  async publish(event: MailboxEvent): Promise<void> {
    await this.bus.publish([event]).catch((err) => this.log.warn('events.publish_failed', { err }));
  }

  /** A reply draft's parent: a live message the caller sees (404), held by the draft's mailbox (400). */
  private async checkParent(principal: Principal, mailbox: Pick<MailboxRef, 'id'>, parentId: string | null) {
    if (parentId === null) return;
    const owner = await liveMessageMailbox(this.db, visibilityOf(principal), parentId);
    if (owner === undefined) throw notFound('Message');
    if (owner !== mailbox.id) throw new AppError('REPLY_MAILBOX_MISMATCH');
  }

  /** One draft write: the mailbox row first, the change, the event with the draft as it is now. */
  private async write(
    mailboxId: string,
    draftId: string,
    type: 'draft.created' | 'draft.updated',
    at: Date,
    change: (trx: Sql, at: Date) => Promise<void>,
  ): Promise<Draft> {
    const { draft, event } = await this.db.tx(async (trx) => {
      await lockMailboxRows(trx, [mailboxId]);
      await change(trx, at);
      const row = await visibleDraft(this.db, { kind: 'mailbox', mailboxId }, draftId, trx);
      if (!row) throw notFound('Draft');
      const draft = toDraft(row, await draftAttachments(trx, [draftId]));
      return { draft, event: await appendEvent(trx, mailboxId, type, draftEventData(draft), at) };
    });
    await this.publish(event);
    this.log.info(type === 'draft.created' ? 'draft.created' : 'draft.updated', { mailboxId, draftId });
    return draft;
  }
}

const EMPTY: DraftColumns = {
  to: [],
  cc: [],
  bcc: [],
  subject: null,
  bodyText: null,
  bodyHtml: null,
  parentMessageId: null,
  replyAll: false,
  sendAt: null,
  cancelOnReply: false,
};

const columnsOf = (r: DraftRow): DraftColumns => ({
  to: r.to_addresses,
  cc: r.cc_addresses,
  bcc: r.bcc_addresses,
  subject: r.subject,
  bodyText: r.body_text,
  bodyHtml: r.body_html,
  parentMessageId: r.parent_message_id,
  replyAll: r.reply_all,
  sendAt: r.send_at === null ? null : new Date(r.send_at),
  cancelOnReply: r.cancel_on_reply,
});

/** The content after a change: absent keeps, null clears, a value replaces. */
function applyChange(current: DraftColumns, c: DraftContent): DraftColumns {
  const pick = <T>(given: T | null | undefined, kept: T | null): T | null => (given === undefined ? kept : given);
  return {
    to: c.toAddress ?? current.to,
    cc: c.ccAddresses ?? current.cc,
    bcc: c.bccAddresses ?? current.bcc,
    subject: pick(c.subject, current.subject),
    bodyText: pick(c.bodyText, current.bodyText),
    bodyHtml: pick(c.bodyHtml, current.bodyHtml),
    parentMessageId: pick(c.parentMessageId, current.parentMessageId),
    replyAll: c.replyAll ?? current.replyAll,
    sendAt: c.sendAt === undefined ? current.sendAt : c.sendAt === null ? null : new Date(c.sendAt),
    cancelOnReply: c.cancelOnReply ?? current.cancelOnReply,
  };
}
