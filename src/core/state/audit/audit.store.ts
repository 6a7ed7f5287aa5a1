import { ID_PREFIX, newId } from '../../base/ids.js';
import { sql, type Database, type Sql } from '../../../storage/database.js';
import type { Col, Narrow, Row } from '../../../storage/rows.js';
import type { Channel, Decision } from './audit.schemas.js';

/** One audit record as written: never a token, never a body. */
export interface AuditRecord {
  mailboxId: string;
  domainId: string;
  tokenId: string | null;
  /** The person who decided through an approval link; null for tokens and the worker. */
  actorAddress?: string | null;
  channel: Channel;
  decision: Decision;
  rule: string | null;
  reason: string | null;
  recipientCount: number;
  newRecipientCount?: number;
  messageId: string | null;
  at: Date;
}

export type AuditRow = Narrow<
  Row<
    'audit_entry',
    | 'id'
    | 'mailbox_id'
    | 'token_id'
    | 'actor_address'
    | 'channel'
    | 'decision'
    | 'rule'
    | 'reason'
    | 'recipient_count'
    | 'new_recipient_count'
    | 'message_id'
    | 'created_at'
  >,
  { channel: Channel; decision: Decision }
> & {
  mailbox_address: Col<'mailbox', 'address'>;
  /** Joined for a trail in words: the message's subject and recipients, the token's name (null when gone). */
  message_subject: string | null;
  message_to: string[] | null;
  message_cc: string[] | null;
  message_bcc: string[] | null;
  token_name: string | null;
};

/** Narrows a page to one decision and/or one channel; null: any. */
export interface AuditFilter {
  decision: Decision | null;
  channel: Channel | null;
}

/** Which entries a caller may read: one mailbox, or every mailbox of a domain. */
export type AuditScope = { mailboxId: string } | { domainId: string };

export class AuditStore {
  constructor(private readonly db: Database) {}

  /** Inside the caller's transaction when a decision commits with it (held, approved …), else alone. */
  async append(r: AuditRecord, trx?: Sql): Promise<void> {
    const q = sql`insert into audit_entry (id, mailbox_id, domain_id, token_id, actor_address, channel, decision, rule,
        reason, recipient_count, new_recipient_count, message_id, created_at)
      values (${newId(ID_PREFIX.audit, r.at.getTime())}, ${r.mailboxId}, ${r.domainId}, ${r.tokenId},
        ${r.actorAddress ?? null}, ${r.channel},
        ${r.decision}, ${r.rule}, ${r.reason?.slice(0, 2000) ?? null}, ${r.recipientCount}, ${r.newRecipientCount ?? 0},
        ${r.messageId}, ${r.at})`;
    if (trx) await q.execute(trx);
    else await this.db.rows(q);
  }

  /** Newest first, keyset-paged on (created_at, id) over audit_entry_mailbox_idx / audit_entry_domain_idx. */
  page(
    scope: AuditScope,
    after: { t: number; i: string } | null,
    limit: number,
    filter: AuditFilter = { decision: null, channel: null },
  ): Promise<AuditRow[]> {
    const where = 'mailboxId' in scope ? sql`a.mailbox_id = ${scope.mailboxId}` : sql`a.domain_id = ${scope.domainId}`;
    const below = after
      ? sql`and (a.created_at, a.id) < (${new Date(after.t)}::timestamptz, ${after.i}::varchar)`
      : sql``;
    // The filters ride on the same index walk (a trail is short-lived: EVENT_RETENTION); the joins
    // are by primary key, one row each.
    return this.db.rows(sql<AuditRow>`select a.*, mb.address as mailbox_address, m.subject as message_subject,
        m.to_addresses as message_to, m.cc_addresses as message_cc, m.bcc_addresses as message_bcc,
        t.name as token_name
      from audit_entry a
      join mailbox mb on mb.id = a.mailbox_id
      left join message m on m.id = a.message_id
      left join access_token t on t.id = a.token_id
      where ${where} ${below}
        ${filter.decision ? sql`and a.decision = ${filter.decision}` : sql``}
        ${filter.channel ? sql`and a.channel = ${filter.channel}` : sql``}
      order by a.created_at desc, a.id desc limit ${limit}`);
  }

  /** Retention like the event log (EVENT_RETENTION); batched so one sweep never holds a long lock. */
  async prune(before: Date, batch = 5000): Promise<number> {
    const rows = await this.db.rows(sql<Row<'audit_entry', 'id'>>`delete from audit_entry where id in (
      select id from audit_entry where created_at < ${before} limit ${batch}) returning id`);
    return rows.length;
  }
}
