import { sql, type Database, type Sql } from '../../../storage/database.js';
import type { Col, Narrow, Row } from '../../../storage/rows.js';
import type { Visibility } from '../../access/principal.js';
import { policyChainSql } from '../../access/token.store.js';

/**
 * When a message's hold began: a send held as it was made, at its creation; a scheduled send, at
 * its sendAt, when the worker decided it. APPROVAL_TTL counts from here, so a send scheduled for
 * next week gives its approver the whole TTL once it is due, not a hold that expired before it began.
 */
const HOLD_STARTED = sql`coalesce(send_at, created_at)`;
/** HOLD_STARTED of a message row in hand. */
export const holdStartedAt = (m: { send_at: string | Date | null; created_at: string | Date }): Date =>
  new Date(m.send_at ?? m.created_at);

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired';

export type ApprovalRow = Narrow<
  Row<
    'message',
    | 'id'
    | 'mailbox_id'
    | 'thread_id'
    | 'approval_status'
    | 'approval_decided_at'
    | 'approval_decided_by'
    | 'delivery_status'
  >,
  { approval_status: ApprovalStatus | null }
> & { domain_id: Col<'mailbox', 'domain_id'>; recipient_count: number };

const visible = (v: Visibility) =>
  v.kind === 'mailbox' ? sql`mb.id = ${v.mailboxId}` : sql`mb.domain_id = ${v.domainId} and mb.disabled_at is null`;

const RETURNING = sql`m.id, m.mailbox_id, mb.domain_id, m.thread_id, m.approval_status, m.approval_decided_at,
  m.approval_decided_by, m.delivery_status,
  (select count(*)::int from message_recipient r where r.message_id = m.id) as recipient_count`;

/** The approval gate's rows. Deciding is one conditional UPDATE: the first decision wins. */
export class ApprovalStore {
  constructor(private readonly db: Database) {}

  /**
   * Moves a pending message to `status` if, and only if, it is still pending. Under concurrency
   * the row lock serialises the updates and the second re-reads `approval_status` (PostgreSQL
   * READ COMMITTED re-check), so exactly one decision returns a row.
   */
  async decide(
    trx: Sql,
    v: Visibility,
    messageId: string,
    status: Exclude<ApprovalStatus, 'pending'>,
    byTokenId: string | null,
    at: Date,
  ): Promise<ApprovalRow | undefined> {
    const delivery = status === 'approved' ? 'queued' : 'failed';
    const row = (
      await sql<ApprovalRow>`update message m set approval_status = ${status}, approval_decided_at = ${at},
        approval_decided_by = ${byTokenId}, delivery_status = ${delivery}
      from mailbox mb where mb.id = m.mailbox_id and m.id = ${messageId} and ${visible(v)}
        and m.approval_status = 'pending' and m.deleted_at is null
      returning ${RETURNING}`.execute(trx)
    ).rows[0];
    if (row) await this.settleRecipients(trx, row.id, status, at);
    return row;
  }

  /** The recipients of a decided message: queued for the worker, or failed with the reason. */
  async settleRecipients(trx: Sql, messageId: string, status: Exclude<ApprovalStatus, 'pending'>, at: Date) {
    const approved = status === 'approved';
    const reply = approved ? null : status === 'expired' ? 'approval expired' : 'rejected by approver';
    await sql`update message_recipient set status = ${approved ? 'queued' : 'failed'}, remote_reply = ${reply},
      updated_at = ${at} where message_id = ${messageId} and status = 'held'`.execute(trx);
  }

  /**
   * The visible live message when `tokenId` wrote it or descends from the token that did (its
   * chain of parents holds the writer): a decision it may not make. The writer never changes, so
   * this read before the decision cannot race with it.
   */
  ownSend(v: Visibility, messageId: string, tokenId: string): Promise<ApprovalRow | undefined> {
    return this.db.one(sql<ApprovalRow>`with approver_chain as (${policyChainSql(tokenId)})
      select ${RETURNING} from message m join mailbox mb on mb.id = m.mailbox_id
      where m.id = ${messageId} and m.deleted_at is null and ${visible(v)}
        and m.sent_by_token_id in (select id from approver_chain)`);
  }

  /** A visible live message's approval state (for idempotent replays and conflicts). */
  current(v: Visibility, messageId: string): Promise<ApprovalRow | undefined> {
    return this.db.one(sql<ApprovalRow>`select ${RETURNING} from message m join mailbox mb on mb.id = m.mailbox_id
      where m.id = ${messageId} and m.deleted_at is null and ${visible(v)}`);
  }

  /** Pending messages held since before `before`, oldest first (message_approval_due_idx). */
  async expire(trx: Sql, before: Date, at: Date, limit: number): Promise<ApprovalRow[]> {
    return (
      await sql<ApprovalRow>`update message m set approval_status = 'expired', approval_decided_at = ${at},
        delivery_status = 'failed'
      from mailbox mb where mb.id = m.mailbox_id and m.id in (
        select id from message where approval_status = 'pending' and ${HOLD_STARTED} < ${before}
        order by created_at limit ${limit} for update skip locked)
        and m.approval_status = 'pending'
      returning ${RETURNING}`.execute(trx)
    ).rows;
  }

  /** Pending messages of a mailbox, for totalCount of `GET /api/messages?approval=pending`. */
  async pendingCount(mailboxId: string): Promise<number> {
    const row = await this.db.one(sql<{ n: number }>`select count(*)::int as n from message
      where mailbox_id = ${mailboxId} and approval_status = 'pending' and deleted_at is null`);
    return row?.n ?? 0;
  }
}
