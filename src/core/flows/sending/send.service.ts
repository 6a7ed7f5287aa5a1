import { settleAll, type Database, type Sql } from '../../../storage/database.js';
import type { CommitGroup } from '../../../storage/commit-group.js';
import { isUniqueViolation } from '../../../storage/errors.js';
import { AppError, isAppError, notFound } from '../../base/errors.js';
import { observability } from '../../base/observability.js';
import { assertRecipientCap } from '../delivery/recipient-cap.js';
import { validationError } from '../../base/validation.js';
import { isAddress } from '../../base/address.js';
import type { EventBus } from '../../../storage/event-bus.js';
import { appendEvent } from '../../state/events/event-log.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import type { RateLimits } from '../../base/ratelimit/rate-limits.js';
import type { Clock } from '../../base/time.js';
import type { Logger } from '../../base/logger.js';
import type { MailboxRef, Principal } from '../../access/principal.js';
import { enabledMailboxRef, requireScope, resolveMailbox, visibilityOf } from '../../access/access.js';
import {
  cancelScheduled,
  refuseScheduled,
  releaseScheduled,
  scheduledMessage,
  visibleOutboundStatus,
  type ScheduledOutcome,
} from './scheduled.store.js';
import {
  idempotencyKeySchema,
  type ForwardInput,
  type ReplyInput,
  type CancelScheduleResult,
  type SendAccepted,
  type SendInput,
} from './send.schemas.js';
import { forwardBodies, forwardSubject } from './forward.js';
import { findForwardSource } from './forward.store.js';
import { writeOutbound, recipientsOf, ownAddresses, type OutboundDraft } from './outbound.store.js';
import { replyRecipients } from './reply-recipients.js';
import { replayIdempotent, requestHash } from './idempotency.js';
import { findReplyParent } from './reply-parent.js';
import { replyReferences, replySubject } from '../delivery/threading.js';
import type { OutboundPolicy, PolicyDraft, PolicyVerdict, SendActor } from '../policy/outbound-policy.js';
import type { AuditStore } from '../../state/audit/audit.store.js';
import { insertApprovalNotices } from '../policy/approval-link.store.js';

/** The remoteReply of a recipient whose scheduled send was cancelled (DELETE …/schedule). */
const SCHEDULE_CANCELLED = 'scheduled send cancelled';

export interface SendOptions {
  /** The client's Idempotency-Key: a retry with the same request returns the first result. */
  idempotencyKey?: string | null | undefined;
  /** Written first inside the send transaction (SMTP: the raw message), so it commits with the row naming it. */
  writeWithin?: (trx: Sql) => Promise<void>;
  /** Commit in this group (SMTP intake) rather than in a transaction of its own. */
  group?: CommitGroup | null;
  /** Scheduled send: ms since the epoch; later than now, it is admitted when it leaves (docs/workflow.md). */
  sendAt?: number | undefined;
  cancelOnReply?: boolean | undefined;
  /** What the Idempotency-Key fingerprints when it is not the content (a draft's send: idempotency.ts). */
  fingerprint?: string | undefined;
  /**
   * Written last inside the send's transaction, once the message is (a draft's send removes the
   * draft): it runs only when the message's own statements succeeded, and fails the send with it.
   */
  afterWrite?: (trx: Sql, accepted: SendAccepted) => Promise<void>;
  /** The stored draft this send is made from: the uploads it holds may be claimed (draft-send.ts). */
  fromDraftId?: string | undefined;
}

/** How an admitted message is written (SendService.write). */
export interface WriteOptions extends Pick<SendOptions, 'writeWithin' | 'group' | 'afterWrite'> {
  at: Date;
  /** The id already given out (queued submission's 250 names it); else a new one. */
  messageId?: string | undefined;
  /** Quota reserved for it at intake, settled against what it occupies. */
  reservedBytes?: number | undefined;
  /** Counted without refusing (accepted while its mailbox had no quota). */
  quotaExempt?: boolean | undefined;
  idempotencyKey?: string | null;
  requestHash?: string | null;
  /** The W3C traceparent its outbox job carries to the worker. */
  traceContext: string | null;
}

/** The message the policy judges: its distinct recipients and, for a reply, the parent's id. */
export const policyDraftOf = (draft: OutboundDraft): PolicyDraft => ({
  recipients: recipientsOf(draft).map((r) => r.address),
  parentId: draft.parent?.id ?? null,
});

/** HTTP and MCP say which channel they are, for the audit trail and the loop guard's header. */
export interface ChannelSendOptions extends SendOptions {
  channel: 'http' | 'mcp';
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
    protected readonly policy: OutboundPolicy,
    protected readonly audit: AuditStore,
  ) {}

  /** POST /api/messages/send, MCP send_mail. */
  async send(principal: Principal, input: SendInput, options: ChannelSendOptions): Promise<SendAccepted> {
    requireScope(principal, 'MailboxSend');
    options = { ...options, sendAt: input.sendAt, cancelOnReply: input.cancelOnReply };
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    return this.submit(
      { tokenId: principal.tokenId, channel: options.channel },
      mailbox,
      {
        to: input.toAddress,
        cc: input.ccAddresses,
        bcc: input.bccAddresses,
        subject: input.subject,
        bodyText: input.bodyText ?? null,
        bodyHtml: input.bodyHtml ?? null,
        attachmentIds: input.attachmentIds,
        parent: null,
      },
      options,
    );
  }

  /**
   * POST /api/messages/{id}/reply, MCP reply_message. The parent must be visible (404), and the
   * acting mailbox must own it (400 REPLY_MAILBOX_MISMATCH). The subject (given or the parent's)
   * carries exactly one "Re: "; recipients by replyRecipients (docs/workflow.md, "Replies").
   */
  async reply(
    principal: Principal,
    messageId: string,
    input: ReplyInput,
    options: ChannelSendOptions,
  ): Promise<SendAccepted> {
    requireScope(principal, 'MailboxSend');
    options = { ...options, sendAt: input.sendAt, cancelOnReply: input.cancelOnReply };
    const parent = await findReplyParent(this.db, visibilityOf(principal), messageId);
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    if (parent.mailboxId !== mailbox.id) throw new AppError('REPLY_MAILBOX_MISMATCH');
    const own = await ownAddresses(this.db, mailbox.id);
    const { to, cc } = replyRecipients(parent, own, input);
    return this.submit(
      { tokenId: principal.tokenId, channel: options.channel },
      mailbox,
      {
        to,
        cc,
        bcc: input.bccAddresses,
        subject: replySubject(input.subject ?? parent.subject),
        bodyText: input.bodyText ?? null,
        bodyHtml: input.bodyHtml ?? null,
        attachmentIds: input.attachmentIds,
        parent: {
          id: parent.id,
          threadId: parent.threadId,
          internetMessageId: parent.internetMessageId,
          references: replyReferences(parent),
        },
      },
      options,
    );
  }

  /**
   * POST /api/messages/{id}/forward, MCP forward_message: a new message in a new thread, to new
   * recipients, carrying the original below the caller's note and a copy of each of its
   * attachments (docs/workflow.md, "Forward"). The original must be visible (404) and in the
   * acting mailbox (400 REPLY_MAILBOX_MISMATCH, as for a reply).
   */
  async forward(
    principal: Principal,
    messageId: string,
    input: ForwardInput,
    options: ChannelSendOptions,
  ): Promise<SendAccepted> {
    requireScope(principal, 'MailboxSend');
    const source = await findForwardSource(this.db, visibilityOf(principal), messageId);
    const mailbox = await resolveMailbox(this.db, principal, input.mailboxAddress);
    if (source.mailboxId !== mailbox.id) throw new AppError('REPLY_MAILBOX_MISMATCH');
    const bodies = forwardBodies(source, { bodyText: input.bodyText ?? null, bodyHtml: input.bodyHtml ?? null });
    return this.submit(
      { tokenId: principal.tokenId, channel: options.channel },
      mailbox,
      {
        to: input.toAddress,
        cc: input.ccAddresses,
        bcc: input.bccAddresses,
        subject: input.subject ?? forwardSubject(source.subject),
        ...bodies,
        attachmentIds: input.attachmentIds,
        forwardedAttachments: source.attachments,
        parent: null,
      },
      options,
    );
  }

  /**
   * Queues one outbound message of an already authorised mailbox, in the decision order of
   * docs/api.md (scope, checked by the caller → policy → rate limit → approval): idempotent replay
   * first (a retry costs no budget), then `admit`, then one transaction that queues the message,
   * or holds it when the policy's approval mode requires, with its audit entry (`write`).
   */
  async submit(
    actor: SendActor,
    mailbox: MailboxRef,
    draft: OutboundDraft,
    options: SendOptions = {},
  ): Promise<SendAccepted> {
    if (options.fromDraftId) draft = { ...draft, fromDraftId: options.fromDraftId };
    this.checkRecipients(draft);
    const key = options.idempotencyKey ? this.parseKey(options.idempotencyKey) : null;
    const hash = key ? (options.fingerprint ?? requestHash(draft, options)) : null;
    if (key && hash) {
      const replay = await replayIdempotent(this.db, mailbox.id, key, hash);
      if (replay) return replay;
    }
    const now = this.clock.now();
    if (options.sendAt !== undefined && options.sendAt > now.getTime())
      return this.schedule(actor, mailbox, draft, { ...options, at: now, key, hash });
    const verdict = await this.admit(actor, mailbox, policyDraftOf(draft));
    try {
      return await this.write(actor, mailbox, draft, verdict, {
        ...options,
        at: this.clock.now(),
        idempotencyKey: key,
        requestHash: hash,
        traceContext: observability().currentTraceparent(),
      });
    } catch (err) {
      // A concurrent retry committed first: the unique (mailbox, key) index made us wait, now replay it.
      if (key && hash && isUniqueViolation(err, 'message_idempotency_uq')) {
        const replay = await replayIdempotent(this.db, mailbox.id, key, hash);
        if (replay) return replay;
      }
      throw err;
    }
  }

  /**
   * Every decision on a message before it is written: the outbound policy (403, audited), the
   * loop guard's reply budget and the per-mailbox rate limit (429, audited). Queued submission
   * (587) makes them before its 250 and writes the message behind it with the verdict.
   */
  async admit(actor: SendActor, mailbox: MailboxRef, policyDraft: PolicyDraft): Promise<PolicyVerdict> {
    const verdict = await this.policy.decide(actor, mailbox, policyDraft);
    await this.policy.assertReplyBudget(actor, mailbox, policyDraft, verdict);
    // The mailbox's own limit, else its domain's (read with the MailboxRef), else the configured default.
    await this.limits.consumeSend(mailbox.id, mailbox.sendRateLimitPerMinute).catch(async (err: Error) => {
      await this.policy.recordRefusal(actor, mailbox, policyDraft.recipients.length, 'sendRateLimit', err);
      throw err;
    });
    return verdict;
  }

  /**
   * Writes an admitted message in one transaction (or the SMTP intake's commit group): the message
   * rows, its outbox job unless held, and its audit entry; the event is published after commit.
   */
  async write(
    actor: SendActor,
    mailbox: MailboxRef,
    draft: OutboundDraft,
    verdict: PolicyVerdict,
    options: WriteOptions,
  ): Promise<SendAccepted> {
    verdict = this.policy.withContent(verdict, draft);
    const meta = {
      at: options.at,
      sentByTokenId: actor.tokenId,
      messageId: options.messageId,
      reservedBytes: options.reservedBytes,
      quotaExempt: options.quotaExempt,
      idempotencyKey: options.idempotencyKey ?? null,
      requestHash: options.requestHash ?? null,
      traceContext: options.traceContext,
      held: verdict.hold !== null,
      autoSubmitted: verdict.autoSubmitted,
    };
    const write = async (trx: Sql) => {
      // Issued together (one round trip when pipelined, Database.writeTx), awaited together.
      const within = options.writeWithin?.(trx);
      // A hold's notices to the mailbox's approvers commit with it (docs/workflow.md, "Approval links").
      const outbound = writeOutbound(trx, mailbox, draft, meta, (messageId) =>
        settleAll([
          this.audit.append(auditOfVerdict(actor, mailbox, verdict, messageId, meta.at), trx),
          verdict.hold ? insertApprovalNotices(trx, messageId, mailbox.id, meta.at) : undefined,
        ]),
      );
      await settleAll([within, outbound]);
      const written = await outbound;
      await options.afterWrite?.(trx, written.accepted);
      return written;
    };
    const written = await (options.group ? options.group.run(mailbox.id, write) : this.db.writeTx(write));
    this.log.info('message.queued', {
      mailboxId: mailbox.id,
      messageId: written.accepted.messageId,
      recipients: recipientsOf(draft).length,
    });
    await this.bus.publish([written.event]).catch((err) => this.log.warn('events.publish_failed', { err }));
    return written.accepted;
  }

  /**
   * A scheduled send: written now with its job due at sendAt and no decision made; the policy,
   * loop guard and rate limit judge it when the worker admits it (`admitScheduled`).
   */
  private async schedule(
    actor: SendActor,
    mailbox: MailboxRef,
    draft: OutboundDraft,
    options: SendOptions & { at: Date; key: string | null; hash: string | null },
  ): Promise<SendAccepted> {
    const schedule = {
      sendAt: new Date(options.sendAt!),
      cancelOnReply: options.cancelOnReply === true,
      actor,
    };
    const meta = {
      at: options.at,
      idempotencyKey: options.key,
      requestHash: options.hash,
      traceContext: observability().currentTraceparent(),
      // The scheduling token is the sender: it may not approve the send if it is held when due.
      sentByTokenId: actor.tokenId,
      schedule,
    };
    try {
      const written = await this.db.writeTx(async (trx) => {
        const outbound = await writeOutbound(trx, mailbox, draft, meta);
        await options.afterWrite?.(trx, outbound.accepted);
        return outbound;
      });
      this.log.info('message.scheduled', {
        mailboxId: mailbox.id,
        messageId: written.accepted.messageId,
        sendAt: schedule.sendAt.toISOString(),
      });
      await this.bus.publish([written.event]).catch((err) => this.log.warn('events.publish_failed', { err }));
      return written.accepted;
    } catch (err) {
      if (options.key && options.hash && isUniqueViolation(err, 'message_idempotency_uq')) {
        const replay = await replayIdempotent(this.db, mailbox.id, options.key, options.hash);
        if (replay) return replay;
      }
      throw err;
    }
  }

  /**
   * DELETE /api/messages/{id}/schedule: a scheduled message that has not left never leaves.
   * Idempotent (cancelled again: `cancelled: false`); one that left already, or was never
   * scheduled, is a 409. A domain token may name the mailbox (docs/workflow.md).
   */
  /** The route checks a named mailbox against the message's (route `target`, assertTargetMailbox). */
  async cancelSchedule(principal: Principal, input: { messageId: string }): Promise<CancelScheduleResult> {
    requireScope(principal, 'MailboxSend');
    const visibility = visibilityOf(principal);
    const current = await visibleOutboundStatus(this.db, visibility, input.messageId);
    if (!current) throw notFound('Message');
    const at = this.clock.now();
    const { cancelled, events } =
      current.delivery_status === 'scheduled'
        ? await this.db.writeTx(async (trx) => {
            const { ids, recipients } = await cancelScheduled(trx, { messageId: input.messageId }, at);
            // Told like any outcome of a recipient (message.delivery, `cancelled`), so live
            // readers, webhooks and the change marks of lists and the detail follow the cancel.
            const appended: MailboxEvent[] = [];
            for (const r of recipients)
              appended.push(
                await appendEvent(
                  trx,
                  current.mailbox_id,
                  'message.delivery',
                  {
                    messageId: input.messageId,
                    recipient: r.address,
                    recipientStatus: 'cancelled',
                    deliveryStatus: 'cancelled',
                    remoteReply: SCHEDULE_CANCELLED,
                    deliveredAtTs: null,
                  },
                  at,
                ),
              );
            return { cancelled: ids.length > 0, events: appended };
          })
        : { cancelled: false, events: [] };
    if (cancelled) {
      this.log.info('message.schedule_cancelled', { messageId: input.messageId });
      await this.bus.publish(events).catch((err) => this.log.warn('events.publish_failed', { err }));
      return { messageId: input.messageId, status: 'cancelled', cancelled: true };
    }
    // Not cancelled by this call: cancelled before (idempotent), or it left meanwhile.
    const now = await visibleOutboundStatus(this.db, visibility, input.messageId);
    if (now?.delivery_status === 'cancelled')
      return { messageId: input.messageId, status: 'cancelled', cancelled: false };
    throw new AppError('SCHEDULE_NOT_CANCELLABLE');
  }

  /**
   * The decisions a scheduled send was spared, made now that it is due: the policy (a refusal is
   * audited and the message fails), the loop guard and rate limit (429: it waits and is tried
   * again), approval (held until decided). Returns what the worker does with the job.
   */
  async admitScheduled(messageId: string, actor: SendActor): Promise<ScheduledOutcome> {
    const row = await scheduledMessage(this.db, messageId);
    if (row?.delivery_status !== 'scheduled') return { kind: 'gone' };
    const mailbox = await enabledMailboxRef(this.db, row.domain_id, row.mailbox_id);
    const content = { subject: row.subject, bodyText: row.body_text, bodyHtml: row.body_html };
    const policyDraft = {
      recipients: recipientsOf({ to: row.to_addresses, cc: row.cc_addresses, bcc: row.bcc_addresses }).map(
        (r) => r.address,
      ),
      parentId: row.in_reply_to_message_id,
    };
    const at = this.clock.now();
    let verdict: PolicyVerdict;
    try {
      if (!mailbox) throw new AppError('NOT_FOUND', 'Mailbox not found or disabled.');
      verdict = this.policy.withContent(await this.admit(actor, mailbox, policyDraft), content);
    } catch (err) {
      if (isAppError(err) && err.status === 429)
        return { kind: 'later', retryAfterMs: (err.retryAfterSeconds ?? 60) * 1000 };
      const reason = err instanceof Error ? err.message : String(err);
      const failed = await refuseScheduled(this.db, messageId, reason, at);
      return failed ? { kind: 'refused', reason } : { kind: 'gone' };
    }
    const released = await this.db.writeTx(async (trx) => {
      const ok = await releaseScheduled(trx, messageId, verdict.hold !== null, verdict.autoSubmitted, at);
      if (ok && mailbox) await this.audit.append(auditOfVerdict(actor, mailbox, verdict, messageId, at), trx);
      if (ok && mailbox && verdict.hold) await insertApprovalNotices(trx, messageId, mailbox.id, at);
      return ok;
    });
    if (!released) return { kind: 'gone' };
    return verdict.hold ? { kind: 'held' } : { kind: 'send' };
  }

  protected checkRecipients(draft: OutboundDraft): void {
    const total = draft.to.length + draft.cc.length + draft.bcc.length;
    if (total === 0) throw new AppError('VALIDATION_FAILED', 'toAddress: at least one recipient is required.');
    assertRecipientCap(total, this.options.maxRecipients, 'toAddress + ccAddresses + bccAddresses');
    // Parsed input is valid already; this catches defaults taken from a parent (an odd inbound From).
    const bad = [...draft.to, ...draft.cc, ...draft.bcc].find((a) => !isAddress(a));
    if (bad !== undefined)
      throw new AppError(
        'VALIDATION_FAILED',
        `toAddress: ${JSON.stringify(bad)} is not a deliverable address; give toAddress explicitly.`,
      );
  }

  private parseKey(raw: string): string {
    const parsed = idempotencyKeySchema.safeParse(raw);
    if (!parsed.success) throw validationError(parsed.error, 'Idempotency-Key');
    return parsed.data;
  }
}

/** The audit entry of a message the policy let through: accepted, or held for approval. */
function auditOfVerdict(actor: SendActor, mailbox: MailboxRef, verdict: PolicyVerdict, messageId: string, at: Date) {
  return {
    mailboxId: mailbox.id,
    domainId: mailbox.domainId,
    tokenId: actor.tokenId,
    channel: actor.channel,
    decision: verdict.hold ? ('held' as const) : ('accepted' as const),
    rule: verdict.hold ? (verdict.hold.rule ?? `approval:${verdict.hold.mode}`) : null,
    reason: verdict.hold
      ? verdict.hold.rule === 'secretInBody'
        ? `Held for approval by rule secretInBody: the subject or body carries a secret (${verdict.hold.secret}).`
        : `Held for approval by policy rule approval (${verdict.hold.mode}) of ${sourceName(verdict.hold.source)}.`
      : null,
    recipientCount: verdict.recipientCount,
    newRecipientCount: verdict.newRecipientCount,
    messageId,
    at,
  };
}

const sourceName = (source: string) => (source === 'mailbox' ? "the mailbox's policy" : source);
