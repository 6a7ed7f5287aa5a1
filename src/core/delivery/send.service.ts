import type { Database } from '../../storage/database.js';
import { sql } from '../../storage/database.js';
import { isUniqueViolation } from '../../storage/errors.js';
import { currentTraceparent } from '../../telemetry/tracing.js';
import { AppError } from '../errors.js';
import { isAddress } from '../address.js';
import type { EventBus } from '../events/event-bus.js';
import type { RateLimits } from '../ratelimit/rate-limits.js';
import type { Clock } from '../time.js';
import type { Logger } from '../logger.js';
import type { MailboxRef, Principal } from '../auth/principal.js';
import { requireScope, resolveMailbox, visibilityOf } from '../auth/access.js';
import { idempotencyKeySchema, type ReplyInput, type SendAccepted, type SendInput } from './send.schemas.js';
import { writeOutbound, recipientsOf, type OutboundDraft } from './outbound-store.js';
import { replayIdempotent, requestHash } from './idempotency.js';
import { findReplyParent } from './reply-parent.js';
import { replyReferences, replySubject } from './threading.js';

export interface SendOptions {
  /** The client's Idempotency-Key: a retry with the same request returns the first result. */
  idempotencyKey?: string | null | undefined;
}

/**
 * Send and reply up to the outbox (spec: accepted and queued, 202). Channel-neutral: HTTP and
 * MCP call `send`/`reply` with a principal; SMTP submission, which authorises in its own way,
 * calls `submit` with the resolved mailbox. Every path shares the rate limit and idempotency.
 */
export class SendService {
  constructor(
    protected readonly db: Database,
    protected readonly bus: EventBus,
    protected readonly limits: RateLimits,
    protected readonly clock: Clock,
    protected readonly log: Logger,
    protected readonly options: { maxRecipients: number },
  ) {}

  /** POST /api/messages/send, MCP send_mail. */
  async send(principal: Principal, input: SendInput, options: SendOptions = {}): Promise<SendAccepted> {
    requireScope(principal, 'MailboxSend');
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    return this.submit(mailbox, {
      to: input.toAddress, cc: input.ccAddresses, bcc: input.bccAddresses, subject: input.subject,
      bodyText: input.bodyText ?? null, bodyHtml: input.bodyHtml ?? null, attachmentIds: input.attachmentIds, parent: null,
    }, options);
  }

  /**
   * POST /api/messages/{id}/reply, MCP reply_message. The parent must be visible (404), and the
   * acting mailbox must own it (400 REPLY_MAILBOX_MISMATCH). Defaults: "Re: <subject>" without
   * stacking, and To = the parent's sender (inbound parent) or the parent's To (outbound parent).
   */
  async reply(principal: Principal, messageId: string, input: ReplyInput, options: SendOptions = {}): Promise<SendAccepted> {
    requireScope(principal, 'MailboxSend');
    const parent = await findReplyParent(this.db, visibilityOf(principal), messageId);
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    if (parent.mailboxId !== mailbox.id) throw new AppError('REPLY_MAILBOX_MISMATCH');
    const to = input.toAddress ?? (parent.direction === 'inbound' ? [parent.fromAddress] : parent.toAddresses);
    return this.submit(mailbox, {
      to, cc: input.ccAddresses, bcc: input.bccAddresses, subject: input.subject ?? replySubject(parent.subject),
      bodyText: input.bodyText ?? null, bodyHtml: input.bodyHtml ?? null, attachmentIds: input.attachmentIds,
      parent: { id: parent.id, threadId: parent.threadId, internetMessageId: parent.internetMessageId, references: replyReferences(parent) },
    }, options);
  }

  /**
   * Queues one outbound message of an already authorised mailbox: idempotent replay first (a
   * retry costs no rate budget), then the per-mailbox rate limit, then one transaction. Events
   * are published only after commit.
   */
  async submit(mailbox: MailboxRef, draft: OutboundDraft, options: SendOptions = {}): Promise<SendAccepted> {
    this.checkRecipients(draft);
    const key = options.idempotencyKey ? this.parseKey(options.idempotencyKey) : null;
    const hash = key ? requestHash(draft) : null;
    if (key && hash) {
      const replay = await replayIdempotent(this.db, mailbox.id, key, hash);
      if (replay) return replay;
    }
    await this.limits.consumeSend(mailbox.id, await this.sendRateLimitOf(mailbox));
    const meta = { at: this.clock.now(), idempotencyKey: key, requestHash: hash, traceContext: currentTraceparent() };
    let written: Awaited<ReturnType<typeof writeOutbound>>;
    try {
      written = await this.db.tx((trx) => writeOutbound(trx, mailbox, draft, meta));
    } catch (err) {
      // A concurrent retry committed first: the unique (mailbox, key) index made us wait, now replay it.
      if (key && hash && isUniqueViolation(err, 'message_idempotency_uq')) {
        const replay = await replayIdempotent(this.db, mailbox.id, key, hash);
        if (replay) return replay;
      }
      throw err;
    }
    this.log.info('message.queued', { mailboxId: mailbox.id, messageId: written.accepted.messageId, recipients: recipientsOf(draft).length });
    await this.bus.publish([written.event]).catch((err) => this.log.warn('events.publish_failed', { err }));
    return written.accepted;
  }

  private checkRecipients(draft: OutboundDraft): void {
    const total = draft.to.length + draft.cc.length + draft.bcc.length;
    if (total === 0) throw new AppError('VALIDATION_FAILED', 'toAddress: at least one recipient is required.');
    if (total > this.options.maxRecipients) {
      throw new AppError('VALIDATION_FAILED', `Too many recipients: ${total} (toAddress + ccAddresses + bccAddresses) exceeds ${this.options.maxRecipients}.`);
    }
    // Parsed input is valid already; this catches defaults taken from a parent (an odd inbound From).
    const bad = [...draft.to, ...draft.cc, ...draft.bcc].find((a) => !isAddress(a));
    if (bad !== undefined) throw new AppError('VALIDATION_FAILED', `toAddress: ${JSON.stringify(bad)} is not a deliverable address; give toAddress explicitly.`);
  }

  private parseKey(raw: string): string {
    const parsed = idempotencyKeySchema.safeParse(raw);
    if (!parsed.success) throw new AppError('VALIDATION_FAILED', `Idempotency-Key: ${parsed.error.issues[0]!.message}`);
    return parsed.data;
  }

  /** The mailbox's own limit, else its domain's, else the configured default (null). */
  private async sendRateLimitOf(mailbox: MailboxRef): Promise<number | null> {
    if (mailbox.sendRateLimitPerMinute !== null) return mailbox.sendRateLimitPerMinute;
    const row = await this.db.one(sql<{ send_rate_limit_per_minute: number | null }>`
      select send_rate_limit_per_minute from domain where id = ${mailbox.domainId}`);
    return row?.send_rate_limit_per_minute ?? null;
  }
}
