import { sql, type Database, type Sql } from '../../../storage/database.js';
import type { Col } from '../../../storage/rows.js';
import { validTokenSql } from '../../access/token.store.js';

/** The queries of MCP webhook subscriptions (mcp_event_subscription and the webhook row each owns). */

export interface SubscriptionRow {
  id: string;
  webhook_id: string;
  refresh_before: Col<'mcp_event_subscription', 'refresh_before'>;
}

/**
 * The mailbox's event sequence, row-locked: no event of it commits until this transaction ends.
 * FOR NO KEY UPDATE, the mode every mailbox row lock takes (`lockMailboxRows` says why).
 */
export async function lockMailboxHead(trx: Sql, mailboxId: string): Promise<number> {
  const row = (
    await sql<{
      event_seq: string | number;
    }>`select event_seq from mailbox where id = ${mailboxId} for no key update`.execute(trx)
  ).rows[0];
  return Number(row?.event_seq ?? 0);
}

export async function findSubscription(trx: Sql, key: string): Promise<SubscriptionRow | undefined> {
  return (
    await sql<SubscriptionRow>`select id, webhook_id, refresh_before from mcp_event_subscription
      where subscription_key = ${key}`.execute(trx)
  ).rows[0];
}

/** A new subscription: its webhook row (delivered by the webhook worker) and the subscription beside it. */
export async function insertSubscription(
  trx: Sql,
  s: {
    id: string;
    webhookId: string;
    key: string;
    domainId: string;
    mailboxId: string;
    tokenId: string;
    eventType: string;
    url: string;
    secretCipher: string;
    startSeq: number;
    refreshBefore: Date;
    at: Date;
  },
): Promise<void> {
  await sql`insert into webhook (id, domain_id, mailbox_id, url, event_types, mailbox_ids, secret_cipher, created_by_token_id, created_at)
    values (${s.webhookId}, ${s.domainId}, ${s.mailboxId}, ${s.url}, ${[s.eventType]}::text[], null, ${s.secretCipher},
      ${s.tokenId}, ${s.at})`.execute(trx);
  await sql`insert into mcp_event_subscription (id, webhook_id, token_id, mailbox_id, event_type, subscription_key, start_seq,
      refresh_before, created_at)
    values (${s.id}, ${s.webhookId}, ${s.tokenId}, ${s.mailboxId}, ${s.eventType}, ${s.key}, ${s.startSeq},
      ${s.refreshBefore}, ${s.at})`.execute(trx);
}

/** A refresh: the new lease and secret; deliveries the webhook gave up on resume. */
export async function refreshSubscription(
  trx: Sql,
  row: SubscriptionRow,
  refreshBefore: Date,
  secretCipher: string,
): Promise<void> {
  await sql`update mcp_event_subscription set refresh_before = ${refreshBefore} where id = ${row.id}`.execute(trx);
  await sql`update webhook set secret_cipher = ${secretCipher}, disabled_at = null, disabled_reason = null
    where id = ${row.webhook_id}`.execute(trx);
  await sql`update webhook_delivery set status = 'pending', next_attempt_at = now(), lease_until = null, locked_by = null
    where webhook_id = ${row.webhook_id} and status = 'abandoned'`.execute(trx);
}

/**
 * Queues the retained events of a subscription's type after its start that have no delivery yet:
 * of one subscription (`{ subscriptionId }`, at creation), or of every live one but only among
 * events since `since` (the sweep). Deliveries are kept once made (status delivered) and the
 * outbox's key is (webhook, mailbox, seq), so this never sends an event twice; the sweep closes
 * the one window where appendEvent cannot see a subscription that commits while the event's
 * statement waits for the mailbox row.
 */
export async function queueMissing(
  db: Database,
  which: { subscriptionId: string } | { since: Date },
  now: Date,
  on?: Sql,
): Promise<number> {
  const filter =
    'subscriptionId' in which
      ? sql`s.id = ${which.subscriptionId}`
      : sql`s.refresh_before > ${now} and e.occurred_at >= ${which.since}`;
  const q = sql`insert into webhook_delivery (webhook_id, mailbox_id, seq, payload, status, attempts, next_attempt_at, created_at)
    select s.webhook_id, e.mailbox_id, e.seq, e.payload, 'pending', 0, ${now}, ${now}
    from mcp_event_subscription s
    join mailbox_event e on e.mailbox_id = s.mailbox_id and e.seq > s.start_seq and e.type = s.event_type
    where ${filter}
    on conflict do nothing returning 1`;
  return (await db.rows(q, on)).length;
}

/** The lowest sequence not yet delivered (or given up) to a subscription's webhook, null when none waits. */
export async function firstUndelivered(trx: Sql, webhookId: string): Promise<number | null> {
  const row = (
    await sql<{ seq: string | number | null }>`select min(seq) as seq from webhook_delivery
      where webhook_id = ${webhookId} and status = 'pending'`.execute(trx)
  ).rows[0];
  return row?.seq == null ? null : Number(row.seq);
}

export async function deleteSubscription(db: Database, key: string): Promise<boolean> {
  return (
    (
      await db.rows(sql`delete from webhook w using mcp_event_subscription s
      where s.webhook_id = w.id and s.subscription_key = ${key} returning w.id`)
    ).length > 0
  );
}

/**
 * Removes subscriptions whose lease ran out, or whose token may no longer read the mailbox
 * (disabled, expired or deleted token, disabled domain or mailbox): the rule of the real-time
 * hub's revalidation (`validTokenSql`). Their webhook rows go with them, pending deliveries too.
 */
export async function deleteLapsed(db: Database, now: Date): Promise<number> {
  return (
    await db.rows(sql`delete from webhook w using mcp_event_subscription s
      where s.webhook_id = w.id and (s.refresh_before <= ${now} or not exists (
        select 1 from access_token t join domain d on d.id = t.domain_id left join mailbox tm on tm.id = t.mailbox_id
          join mailbox m on m.id = s.mailbox_id and m.disabled_at is null and m.domain_id = t.domain_id
            and (t.kind = 'domain' or t.mailbox_id = m.id)
        where t.id = s.token_id and ${validTokenSql(now)}))
      returning w.id`)
  ).length;
}
