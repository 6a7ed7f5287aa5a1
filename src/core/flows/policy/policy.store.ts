import { jsonValue, sql, type Database, type Sql } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';
import { policyChainSql } from '../../access/token.store.js';
import { contactedSql } from './contacts.store.js';
import {
  DEFAULT_MAILBOX_POLICY,
  mailboxPolicySchema,
  type MailboxPolicy,
  type TokenPolicy,
} from '../../access/policy.schemas.js';

/** A mailbox's stored policy with the defaults filled in (a row written before the policy column existed has null). */
export const policyOf = (stored: unknown): MailboxPolicy =>
  stored === null || stored === undefined ? DEFAULT_MAILBOX_POLICY : mailboxPolicySchema.parse(stored);

/**
 * Writes a declared policy inside the reconcile transaction; true when it changed (jsonb compares
 * by value, so key order never counts as a change).
 */
export async function writeDeclaredPolicy(trx: Sql, mailboxId: string, policy: MailboxPolicy): Promise<boolean> {
  const json = JSON.stringify(policy);
  const rows = (
    await sql<Row<'mailbox', 'id'>>`update mailbox set policy = ${json}::jsonb
    where id = ${mailboxId} and policy is distinct from ${json}::jsonb returning id`.execute(trx)
  ).rows;
  return rows.length > 0;
}

/** The stored layers of a decision: the mailbox's policy and the acting token's chain, root first. */
export interface PolicyLayers {
  mailbox: MailboxPolicy;
  chain: { id: string; policy: TokenPolicy | null }[];
}

/** The columns `policyLayersSql` adds to a select. */
export interface PolicyLayersRow {
  policy: unknown;
  chain: unknown;
}

/**
 * Select-list columns `policy` and `chain`: the mailbox's policy and the token chain, so a step
 * that reads anyway (SMTP MAIL FROM) can bring them in its own statement.
 */
export const policyLayersSql = (mailboxId: string, tokenId: string) => sql`
      (select policy from mailbox where id = ${mailboxId}) as policy,
      (select json_agg(json_build_object('id', c.id, 'policy', c.policy) order by c.depth desc)
        from (${policyChainSql(tokenId)}) c) as chain`;

export function policyLayersOf(row: PolicyLayersRow | undefined): PolicyLayers {
  const chain = jsonValue(row?.chain) as PolicyLayers['chain'] | null;
  return { mailbox: policyOf(jsonValue(row?.policy)), chain: chain ?? [] };
}

/** Messages the policy let out (never held, or approved): the loop guard counts only those replies. */
const letOut = sql`(m.approval_status is null or m.approval_status = 'approved')`;

/** The policy's questions to storage, each one indexed query. */
export class PolicyStore {
  constructor(private readonly db: Database) {}

  async mailboxPolicy(mailboxId: string): Promise<MailboxPolicy> {
    const row = await this.db.one(sql<Row<'mailbox', 'policy'>>`select policy from mailbox where id = ${mailboxId}`);
    return policyOf(row?.policy);
  }

  /**
   * What a decision is made of, in one round trip: the mailbox's policy, the acting token's chain
   * (root first) and which of `addresses` the mailbox has corresponded with (contacts.store.ts;
   * the others are new recipients). SMTP asks at the end of DATA (and at RCPT TO when the rules
   * count new recipients: see OutboundPolicy.rulesOf).
   */
  async policyInputs(
    mailboxId: string,
    tokenId: string,
    addresses: readonly string[],
  ): Promise<PolicyLayers & { contacted: Set<string> }> {
    const row = await this.db.one(sql<PolicyLayersRow & { contacted: string[] | null }>`select
      ${policyLayersSql(mailboxId, tokenId)},
      array(${contactedSql(mailboxId, addresses)}) as contacted`);
    return { ...policyLayersOf(row), contacted: new Set(row?.contacted ?? []) };
  }

  /**
   * Which of `addresses` the mailbox answers to or sends as (primary, active aliases, active sender
   * identities): never an approver of its own sends, since its agent reads that mail.
   */
  async ownAddressesAmong(mailboxId: string, addresses: readonly string[]): Promise<string[]> {
    if (addresses.length === 0) return [];
    const rows = await this.db.rows(sql<{ address: string }>`select address from (
        select address from mailbox where id = ${mailboxId}
        union select address from mailbox_alias where mailbox_id = ${mailboxId} and is_active
        union select address from sender_identity where mailbox_id = ${mailboxId} and is_active) own
      where lower(address) = any(${[...addresses]}::text[])`);
    return rows.map((r) => r.address.toLowerCase());
  }

  async setMailboxPolicy(trx: Sql, mailboxId: string, policy: MailboxPolicy): Promise<void> {
    await sql`update mailbox set policy = ${JSON.stringify(policy)}::jsonb where id = ${mailboxId}`.execute(trx);
  }

  /** New recipients this mailbox wrote to since `since` (the audit trail counts them per send). */
  async newRecipientsSince(mailboxId: string, since: Date): Promise<number> {
    const row = await this.db.one(sql<{ n: string | number | null }>`select sum(new_recipient_count) as n
      from audit_entry where mailbox_id = ${mailboxId} and created_at > ${since}
        and decision in ('accepted', 'held')`);
    return Number(row?.n ?? 0);
  }

  /**
   * Replies this mailbox sent to each of `addresses` since `since`, with the oldest of them (when
   * the budget frees up again): the loop guard's per-counterparty count.
   */
  async repliesSince(
    mailboxId: string,
    addresses: readonly string[],
    since: Date,
  ): Promise<{ address: string; n: number; oldest: Date }[]> {
    if (addresses.length === 0) return [];
    const rows = await this.db.rows(sql<{ address: string; n: string | number; oldest: string }>`
      select r.address, count(*) as n, min(m.created_at) as oldest
      from message_recipient r join message m on m.id = r.message_id
      where r.address = any(${addresses}::text[]) and m.mailbox_id = ${mailboxId} and m.direction = 'outbound'
        and m.in_reply_to_message_id is not null and m.created_at > ${since} and ${letOut}
      group by r.address`);
    return rows.map((r) => ({ address: r.address, n: Number(r.n), oldest: new Date(r.oldest) }));
  }

  /** The message a reply answers, as far as the loop guard needs it. */
  parent(messageId: string) {
    return this.db.one(
      sql<
        Row<'message', 'direction' | 'raw_blob_key' | 'auto_submitted'>
      >`select direction, raw_blob_key, auto_submitted from message where id = ${messageId}`,
    );
  }
}
