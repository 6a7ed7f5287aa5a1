import { AppError, notFound } from '../../base/errors.js';
import { recordRecipientsOf } from './contacts.store.js';
import { toTs, type Clock } from '../../base/time.js';
import type { Logger } from '../../base/logger.js';
import type { Principal } from '../../access/principal.js';
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
    const at = this.clock.now();
    const outcome = await this.db.tx(async (trx) => {
      const row = await this.store.decide(trx, v, messageId, decision, principal.tokenId, at);
      if (!row) return null;
      if (decision === 'approved') await this.queueDelivery(trx, row.id, row.mailbox_id, at);
      const event = await this.record(trx, row, decision, principal.tokenId, channel, note, at);
      // After the event append, which took the mailbox row lock (the order contacts.store.ts keeps).
      if (decision === 'approved') await recordRecipientsOf(trx, row.mailbox_id, row.id, at);
      return { row, event };
    });
    if (!outcome) return this.replay(v, messageId, decision);
    this.log.info(`message.${decision}`, { messageId, byTokenId: principal.tokenId });
    await this.bus.publish([outcome.event]).catch((err) => this.log.warn('events.publish_failed', { err }));
    return view(outcome.row, true);
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
  private async replay(v: ReturnType<typeof visibilityOf>, messageId: string, decision: Decision) {
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
        out.push(await this.record(trx, row, 'expired', null, 'worker', 'APPROVAL_TTL elapsed', at));
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
    byTokenId: string | null,
    channel: Channel,
    note: string | null,
    at: Date,
  ): Promise<MailboxEvent> {
    await this.audit.append(
      {
        mailboxId: row.mailbox_id,
        domainId: row.domain_id,
        tokenId: byTokenId,
        channel,
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
        decidedByTokenId: byTokenId,
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
