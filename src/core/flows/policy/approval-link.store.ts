import { sql, type Database, type Sql } from '../../../storage/database.js';
import type { Col, Row } from '../../../storage/rows.js';
import type { ApprovalCredentials, OpenedCredential } from '../../access/approval-credential.js';
import type { ApprovalStatus } from './approval.store.js';

/**
 * Written in the hold's own transaction (with its audit entry): one pending notice per address of
 * the mailbox's `approverAddresses`, so a committed hold always has its notices and a rolled-back
 * one never does. Read from the stored policy in the same statement: nothing to pass along.
 */
export function insertApprovalNotices(trx: Sql, messageId: string, mailboxId: string, at: Date) {
  return sql`insert into approval_link (message_id, approver_address, mailbox_id, status, attempts, run_after, created_at)
    select ${messageId}, a.address, mb.id, 'pending', 0, ${at}, ${at}
    from mailbox mb cross join lateral jsonb_array_elements_text(case
        when jsonb_typeof(mb.policy -> 'approverAddresses') = 'array' then mb.policy -> 'approverAddresses'
        else '[]'::jsonb end) as a(address)
    where mb.id = ${mailboxId}
    on conflict do nothing`.execute(trx);
}

/** A notice a worker holds under its lease. */
export interface ClaimedNotice {
  messageId: string;
  approverAddress: string;
  mailboxId: string;
  attempts: number;
  leaseUntil: Date;
}

/** The held message as the notice and the approval page show it, with what decides whether a link still works. */
export type HeldMessageRow = Row<
  'message',
  | 'id'
  | 'mailbox_id'
  | 'subject'
  | 'from_address'
  | 'from_display_name'
  | 'to_addresses'
  | 'cc_addresses'
  | 'bcc_addresses'
  | 'body_text'
  | 'body_html'
  | 'created_at'
  | 'send_at'
  | 'approval_decided_at'
  | 'deleted_at'
> & {
  approval_status: ApprovalStatus | null;
  mailbox_address: Col<'mailbox', 'address'>;
  domain_id: Col<'mailbox', 'domain_id'>;
  /** False when the mailbox or its domain is disabled: its links answer as unknown. */
  enabled: boolean;
  policy: unknown;
  token_name: string | null;
  rule: string | null;
  reason: string | null;
};

export type LinkRow = Row<'approval_link', 'message_id' | 'approver_address' | 'mailbox_id' | 'expires_at' | 'used_at'>;

const leased = (n: ClaimedNotice, workerId: string) =>
  sql`message_id = ${n.messageId} and approver_address = ${n.approverAddress}
    and locked_by = ${workerId} and lease_until = ${n.leaseUntil}`;

/** Approval links and their notices (docs/workflow.md, "Approval links"). */
export class ApprovalLinkStore {
  constructor(
    private readonly db: Database,
    private readonly credentials: ApprovalCredentials,
  ) {}

  /** The oldest due notice, under a lease (FOR UPDATE SKIP LOCKED, like an outbox job). */
  async claimNotice(workerId: string, leaseMs: number, now: Date): Promise<ClaimedNotice | undefined> {
    const leaseUntil = new Date(now.getTime() + leaseMs);
    const row = await this.db.one(sql<
      Row<'approval_link', 'message_id' | 'approver_address' | 'mailbox_id' | 'attempts'>
    >`update approval_link set lease_until = ${leaseUntil}, locked_by = ${workerId}, attempts = attempts + 1
      where (message_id, approver_address) = (select message_id, approver_address from approval_link
        where status = 'pending' and run_after <= ${now} and (lease_until is null or lease_until <= ${now})
        order by run_after limit 1 for update skip locked)
      returning message_id, approver_address, mailbox_id, attempts`);
    if (!row) return undefined;
    return {
      messageId: row.message_id,
      approverAddress: row.approver_address,
      mailboxId: row.mailbox_id,
      attempts: Number(row.attempts),
      leaseUntil,
    };
  }

  /**
   * Mints the link's credential for this attempt and keeps its hash and expiry: a new attempt
   * replaces the hash, so only the link of the mail that was last sent works. Null when the lease
   * was lost (another worker has the notice now).
   */
  async mint(notice: ClaimedNotice, workerId: string, expiresAt: Date): Promise<string | null> {
    const { credential, secretHash } = this.credentials.mint(notice.messageId);
    const rows = await this.db.rows(sql`update approval_link set secret_hash = ${secretHash}, expires_at = ${expiresAt}
      where ${leased(notice, workerId)} returning message_id`);
    return rows.length > 0 ? credential : null;
  }

  /** Ends a notice: `sent`, `failed` (with the reason) or `skipped` (nothing to announce any more). */
  async finishNotice(
    notice: ClaimedNotice,
    workerId: string,
    status: 'sent' | 'failed' | 'skipped',
    lastError: string | null,
    now: Date,
  ): Promise<void> {
    await this.db.rows(sql`update approval_link set status = ${status}, lease_until = null,
        last_error = ${lastError?.slice(0, 2000) ?? null}, sent_at = ${status === 'sent' ? now : null}
      where ${leased(notice, workerId)}`);
  }

  async postponeNotice(notice: ClaimedNotice, workerId: string, runAfter: Date, lastError: string): Promise<void> {
    await this.db.rows(sql`update approval_link set lease_until = null, run_after = ${runAfter},
        last_error = ${lastError.slice(0, 2000)}
      where ${leased(notice, workerId)}`);
  }

  /** The link an opened credential names: its signed message id and its secret's hash must both match. */
  link(opened: OpenedCredential): Promise<LinkRow | undefined> {
    return this.db.one(sql<LinkRow>`select message_id, approver_address, mailbox_id, expires_at, used_at
      from approval_link where message_id = ${opened.messageId} and secret_hash = ${opened.secretHash}`);
  }

  /** A link's current use (after a decision that found the message no longer pending). */
  usedAt(messageId: string, approverAddress: string): Promise<Row<'approval_link', 'used_at'> | undefined> {
    return this.db.one(sql<Row<'approval_link', 'used_at'>>`select used_at from approval_link
      where message_id = ${messageId} and approver_address = ${approverAddress}`);
  }

  /**
   * Spends the link inside the deciding transaction: one conditional UPDATE, so of two requests
   * with one link only one decides, and a link past its expiry decides nothing. Otherwise says why.
   */
  async spend(trx: Sql, messageId: string, approverAddress: string, at: Date): Promise<'spent' | 'used' | 'expired'> {
    const key = sql`message_id = ${messageId} and approver_address = ${approverAddress}`;
    const { rows } = await sql`update approval_link set used_at = ${at}
      where ${key} and used_at is null and expires_at > ${at} returning message_id`.execute(trx);
    if (rows.length > 0) return 'spent';
    const now = (
      await sql<Row<'approval_link', 'used_at'>>`select used_at from approval_link where ${key}`.execute(trx)
    ).rows[0];
    return now?.used_at ? 'used' : 'expired';
  }

  /** The held message with its mailbox, the sending token's name and the audit entry that held it. */
  heldMessage(messageId: string): Promise<HeldMessageRow | undefined> {
    return this.db.one(sql<HeldMessageRow>`select m.id, m.mailbox_id, m.subject, m.from_address, m.from_display_name,
        m.to_addresses, m.cc_addresses, m.bcc_addresses, m.body_text, m.body_html, m.created_at, m.send_at, m.approval_status,
        m.approval_decided_at, m.deleted_at, mb.address as mailbox_address, mb.domain_id, mb.policy,
        (mb.disabled_at is null and d.disabled_at is null) as enabled, t.name as token_name, h.rule, h.reason
      from message m
      join mailbox mb on mb.id = m.mailbox_id
      join domain d on d.id = mb.domain_id
      left join access_token t on t.id = m.sent_by_token_id
      left join lateral (select a.rule, a.reason from audit_entry a
        where a.mailbox_id = m.mailbox_id and a.message_id = m.id and a.decision = 'held'
        order by a.created_at desc limit 1) h on true
      where m.id = ${messageId} and m.direction = 'outbound'`);
  }
}
