import type { MailboxRef, Principal } from '../../access/principal.js';
import { sql, type Database } from '../../../storage/database.js';
import type { Col, Row } from '../../../storage/rows.js';
import { sendRateLimitSql } from '../../base/ratelimit/send-rate-limit.store.js';
import { mailboxFullSql, mailboxLimitedSql } from '../../state/quota/storage-quota.store.js';
import { policyLayersOf, policyLayersSql, type PolicyLayers, type PolicyLayersRow } from '../policy/policy.store.js';

type IdentityRow = Row<'mailbox', 'id' | 'address' | 'domain_id' | 'display_name' | 'send_rate_limit_per_minute'> & {
  identity_name: Col<'sender_identity', 'display_name'>;
  primary_or_alias: boolean;
};

/**
 * The mailbox an SMTP AUTH username acts for, by the spec's SMTP rules 2–4: the username must be
 * an active sender identity of an enabled mailbox in an enabled domain; a mailbox token may use
 * only its own mailbox's identities; a domain token only a mailbox of its own domain whose primary
 * address or active alias the username is. Undefined when any rule fails (the caller answers 535).
 */
export async function submissionMailbox(
  db: Database,
  principal: Principal,
  username: string,
): Promise<(MailboxRef & { identityName: string }) | undefined> {
  const rows = await db.rows(sql<IdentityRow>`
    select m.id, m.address, m.domain_id, m.display_name, ${sendRateLimitSql} as send_rate_limit_per_minute,
      si.display_name as identity_name,
      (m.address = si.address or exists(select 1 from mailbox_alias a where a.mailbox_id = m.id and a.address = si.address and a.is_active)) as primary_or_alias
    from sender_identity si join mailbox m on m.id = si.mailbox_id join domain d on d.id = m.domain_id
    where si.address = ${username} and si.is_active and m.disabled_at is null and d.disabled_at is null
    order by (m.address = si.address) desc, m.id`);
  const row =
    principal.kind === 'mailbox'
      ? rows.find((r) => r.id === principal.mailboxId)
      : rows.find((r) => r.domain_id === principal.domainId && r.primary_or_alias);
  if (!row) return undefined;
  return {
    id: row.id,
    address: row.address,
    domainId: row.domain_id,
    displayName: row.display_name,
    sendRateLimitPerMinute: row.send_rate_limit_per_minute,
    identityName: row.identity_name,
  };
}

/**
 * MAIL FROM on 587 in one statement: whether `address` is an active sender identity of the
 * (enabled) mailbox, whether the mailbox is already at its storage quota (mailboxFullSql) or has one
 * at all (queued submission reserves only then), and the
 * policy layers (the mailbox's and the token chain's) this transaction's RCPT TO commands judge by.
 */
export async function senderAtMailFrom(
  db: Database,
  mailboxId: string,
  tokenId: string,
  address: string,
): Promise<SenderAtMailFrom> {
  const row = await db.one(sql<{ identity: boolean; full: boolean; limited: boolean } & PolicyLayersRow>`select exists(
      select 1 from sender_identity si where si.mailbox_id = m.id and si.address = ${address} and si.is_active
    ) and m.disabled_at is null as identity, ${mailboxFullSql} as full, ${mailboxLimitedSql} as limited, ${policyLayersSql(mailboxId, tokenId)}
    from mailbox m where m.id = ${mailboxId}`);
  return {
    identity: row?.identity === true,
    full: row?.full === true,
    limited: row?.limited !== false,
    layers: policyLayersOf(row),
  };
}

/** What MAIL FROM on 587 reads (senderAtMailFrom). */
export interface SenderAtMailFrom {
  identity: boolean;
  full: boolean;
  limited: boolean;
  layers: PolicyLayers;
}

/** True when every address is an active sender identity of the (enabled) mailbox (one query). */
export async function areActiveIdentities(
  db: Database,
  mailboxId: string,
  addresses: readonly string[],
): Promise<boolean> {
  const wanted = [...new Set(addresses)];
  const row = await db.one(sql<{
    n: number;
  }>`select count(*)::int as n from sender_identity si join mailbox m on m.id = si.mailbox_id
    where si.mailbox_id = ${mailboxId} and si.address = any(${wanted}::text[]) and si.is_active and m.disabled_at is null`);
  return Number(row?.n ?? 0) === wanted.length;
}
