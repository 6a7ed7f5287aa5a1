import { AppError, notFound } from '../../base/errors.js';
import { recordRecipientsOf } from './contacts.store.js';
import { toTs, type Clock } from '../../base/time.js';
import type { Logger } from '../../base/logger.js';
import type { Principal, Visibility } from '../../access/principal.js';
import { requireScope, visibilityOf } from '../../access/access.js';
import type { Database, Sql } from '../../../storage/database.js';
import type { EventBus } from '../../../storage/event-bus.js';
import { appendEvent } from '../../state/events/event-log.js';
import { type MailboxEvent } from '../../../types/mailbox-event.js';
import type { AuditStore } from '../../state/audit/audit.store.js';
import type { Channel } from '../../state/audit/audit.schemas.js';
import type { ApprovalRow, ApprovalStatus, ApprovalStore } from './approval.store.js';
import type { ApprovalResult } from './approval.schemas.js';

type Decision = 'approved' | 'rejected';

/** Who decides: a token (HTTP, MCP, the console), a person through an approval link, or the worker (expiry). */
interface Decider {
  tokenId: string | null;
  /** The approver's address, for a decision through an approval link (the audit's actor). */
  actorAddress: string | null;
  channel: Channel;
}

const WORKER: Decider = { tokenId: null, actorAddress: null, channel: 'worker' };

/**
 * The approval gate's decisions (docs/contract.md, "Outbound policy"; docs/api.md, "Approval gate").
 * Approve and reject are one conditional UPDATE each, in a transaction that also writes the
 * outbox job (approve), the recipients' state, the event and the audit entry: a decision and
 * its consequences commit together, so a worker killed at any point delivers an approved
 * message exactly once (the job is unique per message) and a rejected one never.
 */
export class ApprovalService {
  constructor(
    private readonly db: Database,
    private readonly store: ApprovalStore,
    private readonly audit: AuditStore,
    private readonly bus: EventBus,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: { ttlMs: number },
    /** Queues the approved message for delivery, in the deciding transaction (the outbox is delivery's). */
    private readonly queueDelivery: (trx: Sql, messageId: string, mailboxId: string, at: Date) => Promise<void>,
  ) {}

  /**
   * MailboxApprove on a mailbox token, DomainManage on a domain token: the sender's own
   * integration set lacks both, so an agent cannot approve its own mail.
   */
  authorize(principal: Principal): void {
    requireScope(principal, principal.kind === 'domain' ? 'DomainManage' : 'MailboxApprove');
  }

  decide(principal: Principal, messageId: string, decision: Decision, channel: Channel, reason?: string) {
    this.authorize(principal);
    return this.apply(principal, messageId, decision, channel, reason ?? null);
  }

  /**
   * A decision through an approval link (ApprovalLinkService, docs/workflow.md "Approval links"):
   * the transaction of a token's decision, in the name of the approver's address, with `spend`
   * (the link's one use) inside it, after the message row is locked. Null when the message was no
   * longer pending: nothing changed, and the link is not spent.
   */
  async decideThroughLink(
    grant: { mailboxId: string; messageId: string; approverAddress: string },
    decision: Decision,
    note: string | null,
    spend: (trx: Sql, at: Date) => Promise<void>,
  ): Promise<ApprovalResult | null> {
    const by = { tokenId: null, actorAddress: grant.approverAddress, channel: 'approval-link' as const };
    const row = await this.commit(
      { kind: 'mailbox', mailboxId: grant.mailboxId },
      grant.messageId,
      decision,
      by,
      note,
      spend,
    );
    return row ? view(row, true) : null;
  }

  private async apply(
    principal: Principal,
    messageId: string,
    decision: Decision,
    channel: Channel,
    note: string | null,
  ): Promise<ApprovalResult> {
    const v = visibilityOf(principal);
    const own = await this.store.ownSend(v, messageId, principal.tokenId);
    if (own) await this.refuseSelf(own, principal.tokenId, decision, channel);
    const by = { tokenId: principal.tokenId, actorAddress: null, channel };
    const row = await this.commit(v, messageId, decision, by, note);
    return row ? view(row, true) : this.replay(v, messageId, decision);
  }

  /** The decision and its consequences in one transaction; null when the message was not pending. */
  private async commit(
    v: Visibility,
    messageId: string,
    decision: Decision,
    by: Decider,
    note: string | null,
    within?: (trx: Sql, at: Date) => Promise<void>,
  ): Promise<ApprovalRow | null> {
    const at = this.clock.now();
    const outcome = await this.db.tx(async (trx) => {
      const row = await this.store.decide(trx, v, messageId, decision, by.tokenId, at);
      if (!row) return null;
      // Under the message's row lock: of two requests with one link, the second waits and finds it spent.
      if (within) await within(trx, at);
      if (decision === 'approved') await this.queueDelivery(trx, row.id, row.mailbox_id, at);
      const event = await this.record(trx, row, decision, by, note, at);
      // After the event append, which took the mailbox row lock (the order contacts.store.ts keeps).
      if (decision === 'approved') await recordRecipientsOf(trx, row.mailbox_id, row.id, at);
      return { row, event };
    });
    if (!outcome) return null;
    this.log.info(`message.${decision}`, {
      messageId,
      byTokenId: by.tokenId,
      ...(by.actorAddress ? { byApprover: by.actorAddress, channel: by.channel } : {}),
    });
    await this.bus.publish([outcome.event]).catch((err) => this.log.warn('events.publish_failed', { err }));
    return outcome.row;
  }

  /**
   * Whatever its scopes, the token that made a held send (or one it minted) never decides it:
   * an agent handed MailboxApprove, or given a wider token by mistake, still cannot let its own
   * mail out. Refused with 403 and audited as a refused decision.
   */
  private async refuseSelf(row: ApprovalRow, tokenId: string, decision: Decision, channel: Channel): Promise<never> {
    const at = this.clock.now();
    await this.audit.append({
      mailboxId: row.mailbox_id,
      domainId: row.domain_id,
      tokenId,
      channel,
      decision: 'refused',
      rule: 'approval:self',
      reason: `Refused to ${decision === 'approved' ? 'approve' : 'reject'}: this token made the send or descends from the token that did.`,
      recipientCount: row.recipient_count,
      messageId: row.id,
      at,
    });
    this.log.warn('message.self_decision_refused', { messageId: row.id, byTokenId: tokenId, decision });
    throw new AppError('APPROVAL_SELF_FORBIDDEN');
  }

  /** Nothing was pending: the same decision again is an idempotent 200, another one a 409. */
  private async replay(v: Visibility, messageId: string, decision: Decision) {
    const row = await this.store.current(v, messageId);
    if (!row) throw notFound('Message');
    if (row.approval_status === null) throw new AppError('APPROVAL_NOT_PENDING');
    if (row.approval_status === decision) return view(row, false);
    throw new AppError(
      'APPROVAL_CONFLICT',
      `This message was already ${row.approval_status}${row.approval_decided_at ? ` at ${new Date(row.approval_decided_at).toISOString()}` : ''}; the first decision stands.`,
    );
  }

  /**
   * Expires messages pending longer than APPROVAL_TTL as rejected (the worker's sweeper), each
   * batch in one transaction with its events and audit entries.
   */
  async expireDue(batch = 200): Promise<number> {
    const at = this.clock.now();
    const before = new Date(at.getTime() - this.options.ttlMs);
    const events = await this.db.tx(async (trx) => {
      const rows = await this.store.expire(trx, before, at, batch);
      const out: MailboxEvent[] = [];
      for (const row of rows) {
        await this.store.settleRecipients(trx, row.id, 'expired', at);
        out.push(await this.record(trx, row, 'expired', WORKER, 'APPROVAL_TTL elapsed', at));
      }
      return out;
    });
    if (events.length) await this.bus.publish(events).catch((err) => this.log.warn('events.publish_failed', { err }));
    return events.length;
  }

  private async record(
    trx: Sql,
    row: ApprovalRow,
    status: Exclude<ApprovalStatus, 'pending'>,
    by: Decider,
    note: string | null,
    at: Date,
  ): Promise<MailboxEvent> {
    await this.audit.append(
      {
        mailboxId: row.mailbox_id,
        domainId: row.domain_id,
        tokenId: by.tokenId,
        actorAddress: by.actorAddress,
        channel: by.channel,
        decision: status,
        rule: null,
        reason: note,
        recipientCount: row.recipient_count,
        messageId: row.id,
        at,
      },
      trx,
    );
    return appendEvent(
      trx,
      row.mailbox_id,
      status === 'approved' ? 'message.approved' : 'message.rejected',
      {
        messageId: row.id,
        threadId: row.thread_id,
        approvalStatus: status,
        decidedAtTs: at.getTime(),
        decidedByTokenId: by.tokenId,
        deliveryStatus: status === 'approved' ? 'queued' : 'failed',
      },
      at,
    );
  }
}

const view = (r: ApprovalRow, changed: boolean): ApprovalResult => ({
  messageId: r.id,
  threadId: r.thread_id,
  mailboxId: r.mailbox_id,
  approvalStatus: r.approval_status!,
  decidedAtTs: toTs(r.approval_decided_at),
  decidedByTokenId: r.approval_decided_by,
  deliveryStatus: r.delivery_status,
  changed,
});
