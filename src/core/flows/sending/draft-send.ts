import type { z } from 'zod';
import type { Database, Sql } from '../../../storage/database.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { AppError, isAppError, notFound } from '../../base/errors.js';
import type { Clock } from '../../base/time.js';
import { parseInput } from '../../base/validation.js';
import type { Principal } from '../../access/principal.js';
import { requireScope, visibilityOf } from '../../access/access.js';
import type { DraftService } from '../../state/drafts/draft.service.js';
import type { DraftRow } from '../../state/drafts/draft.store.js';
import { draftSendHash, replayDraftSend } from './idempotency.js';
import { idempotencyKeySchema, replyInputSchema, sendInputSchema, type SendAccepted } from './send.schemas.js';
import type { ChannelSendOptions, SendService } from './send.service.js';

/**
 * POST /api/drafts/{draftId}/send, MCP send_draft: a stored draft goes through the one send path
 * (SendService.send, or .reply for a reply draft): the send's own schema decides whether it is
 * complete, then policy, loop guard, rate limit, approval, idempotency and scheduling as for any
 * send. The draft is removed in the transaction that writes the message, so it goes exactly when
 * the send is accepted (queued, scheduled or held for approval) and stays when it is refused.
 */
export class DraftSendService {
  constructor(
    private readonly db: Database,
    private readonly drafts: DraftService,
    private readonly sending: SendService,
    private readonly clock: Clock,
  ) {}

  async send(
    principal: Principal,
    draftId: string,
    input: { mailboxAddress?: string | undefined },
    options: Pick<ChannelSendOptions, 'channel' | 'idempotencyKey'>,
  ): Promise<SendAccepted> {
    requireScope(principal, 'MailboxSend');
    const key = options.idempotencyKey
      ? parseInput(idempotencyKeySchema, options.idempotencyKey, 'Idempotency-Key')
      : null;
    const row = await this.drafts.target(principal, draftId, input.mailboxAddress);
    if (!row) {
      // A retry after the accepted send removed the draft: the first answer, found by the key.
      const replay = key ? await replayDraftSend(this.db, visibilityOf(principal), key, draftId) : undefined;
      if (replay) return replay;
      throw notFound('Draft');
    }
    let removed: MailboxEvent | undefined;
    const sendOptions = {
      ...options,
      idempotencyKey: key,
      fingerprint: key ? draftSendHash(row.id) : undefined,
      fromDraftId: row.id,
      // After the message's own statements, so a refusal among them (a concurrent retry's key, an
      // upload, the quota) is the send's answer, and the draft goes only with a written message.
      afterWrite: async (trx: Sql, written: SendAccepted) => {
        removed = await this.drafts.removeSent(trx, row, written.messageId, this.clock.now());
      },
    };
    const content = await this.contentOf(principal, row);
    const accepted = row.parent_message_id
      ? await this.sending.reply(
          principal,
          row.parent_message_id,
          complete(replyInputSchema, { ...content, replyAll: row.reply_all }),
          sendOptions,
        )
      : await this.sending.send(principal, complete(sendInputSchema, content), sendOptions);
    // Replayed (the key's first send) or written: only this write removed the draft and has its event.
    if (removed && removed.data.messageId === accepted.messageId) await this.drafts.publish(removed);
    return accepted;
  }

  /** The draft as the send input it holds (a domain token acts on the draft's mailbox). */
  private async contentOf(principal: Principal, row: DraftRow) {
    const given = <T>(v: T | null): T | undefined => (v === null ? undefined : v);
    return {
      ...(principal.kind === 'domain' ? { mailboxAddress: row.mailbox_address } : {}),
      toAddress: row.to_addresses.length > 0 ? row.to_addresses : undefined,
      ccAddresses: row.cc_addresses,
      bccAddresses: row.bcc_addresses,
      subject: given(row.subject),
      bodyText: given(row.body_text),
      bodyHtml: given(row.body_html),
      attachmentIds: await this.drafts.attachmentIdsOf(row.id),
      sendAt: row.send_at === null ? undefined : new Date(row.send_at).getTime(),
      cancelOnReply: row.cancel_on_reply || undefined,
    };
  }
}

/** The send's own schema decides completeness; its 400 names the field and says the draft is kept. */
function complete<S extends z.ZodType>(schema: S, content: unknown): z.output<S> {
  try {
    return parseInput(schema, content, 'draft');
  } catch (err) {
    if (isAppError(err) && err.status === 400)
      throw new AppError(err.code, `${err.message} (the draft is kept: complete it, then send it again)`);
    throw err;
  }
}
