import { jsonValue, sql, type Database, type Sql } from '../../../storage/database.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { validTokenSql } from '../../access/token.store.js';

export interface ClaimedDelivery {
  webhookId: string;
  mailboxId: string;
  seq: number;
  payload: MailboxEvent;
  attempts: number;
  leaseUntil: Date;
  url: string;
  secretCipher: string;
  failingSince: string | null;
  /** False when the token that registered the webhook is disabled, deleted or expired: nothing is sent. */
  creatorValid: boolean;
  /** Set when the webhook is an MCP events subscription's (its body is an EventOccurrence). */
  subscriptionId: string | null;
}

/** Fairness bounds of the claim (docs/webhooks.md, "Fairness"). */
export interface ClaimLimits {
  leaseMs: number;
  /** Deliveries of one domain in flight at once, every worker together. */
  inFlightPerDomain: number;
}

/** One claim at a time, every replica together, so the in-flight count per domain is exact. */
const CLAIM_LOCK = 742_001;

/**
 * Claims the due delivery that heads its (webhook, mailbox) queue, under a lease: FOR UPDATE SKIP
 * LOCKED keeps two workers off one row, the lease keeps a second worker off it until the first
 * is done or dead, and "no earlier pending row" keeps each mailbox's events in order. Between
 * tenants it is fair: a domain with `inFlightPerDomain` deliveries leased is skipped, the domain
 * with the fewest in flight goes first, and a webhook whose circuit is open (failing, inside its
 * backoff) is skipped, its deliveries kept. Claiming for a failing webhook opens its circuit for
 * the lease, so one probe at a time tests a failing endpoint.
 */
export async function claimDelivery(
  db: Database,
  workerId: string,
  limits: ClaimLimits,
  now: Date,
): Promise<ClaimedDelivery | undefined> {
  const until = new Date(now.getTime() + limits.leaseMs);
  return db.tx(async (trx) => {
    await sql`select pg_advisory_xact_lock(${CLAIM_LOCK}::bigint)`.execute(trx);
    const row = (
      await sql<{
        webhook_id: string;
        mailbox_id: string;
        seq: string | number;
      }>`with busy as (
        select bw.domain_id, count(*) as n from webhook_delivery f join webhook bw on bw.id = f.webhook_id
        where f.status = 'pending' and f.lease_until >= ${now}
        group by bw.domain_id)
      select o.webhook_id, o.mailbox_id, o.seq
      from webhook_delivery o
      join webhook w on w.id = o.webhook_id
      left join busy b on b.domain_id = w.domain_id
      where o.status = 'pending' and o.next_attempt_at <= ${now} and (o.lease_until is null or o.lease_until < ${now})
        and (w.circuit_open_until is null or w.circuit_open_until <= ${now})
        and coalesce(b.n, 0) < ${limits.inFlightPerDomain}
        and not exists (select 1 from webhook_delivery e where e.webhook_id = o.webhook_id and e.mailbox_id = o.mailbox_id
          and e.status = 'pending' and e.seq < o.seq)
      order by coalesce(b.n, 0), o.next_attempt_at, o.seq
      limit 1
      for update of o skip locked`.execute(trx)
    ).rows[0];
    if (!row) return undefined;
    const claimed = (
      await sql<{
        payload: MailboxEvent | string;
        attempts: number;
        url: string;
        secret_cipher: string;
        failing_since: string | null;
        creator_valid: boolean;
        subscription_id: string | null;
      }>`update webhook_delivery o set lease_until = ${until}, locked_by = ${workerId}
      from webhook w
      where w.id = o.webhook_id and o.webhook_id = ${row.webhook_id} and o.mailbox_id = ${row.mailbox_id}
        and o.seq = ${row.seq}
      returning o.payload, o.attempts, w.url, w.secret_cipher, w.failing_since,
        exists (select 1 from access_token t join domain d on d.id = t.domain_id left join mailbox tm on tm.id = t.mailbox_id
          where t.id = w.created_by_token_id and ${validTokenSql(now)}) as creator_valid,
        (select s.id from mcp_event_subscription s where s.webhook_id = w.id) as subscription_id`.execute(trx)
    ).rows[0]!;
    if (claimed.failing_since !== null)
      await sql`update webhook set circuit_open_until = ${until} where id = ${row.webhook_id}`.execute(trx);
    return {
      webhookId: row.webhook_id,
      mailboxId: row.mailbox_id,
      seq: Number(row.seq),
      payload: jsonValue(claimed.payload) as MailboxEvent,
      attempts: claimed.attempts,
      leaseUntil: until,
      url: claimed.url,
      secretCipher: claimed.secret_cipher,
      failingSince: claimed.failing_since,
      creatorValid: claimed.creator_valid,
      subscriptionId: claimed.subscription_id,
    };
  });
}

const held = (d: ClaimedDelivery, workerId: string) =>
  sql`d.webhook_id = ${d.webhookId} and d.mailbox_id = ${d.mailboxId} and d.seq = ${d.seq}
    and d.locked_by = ${workerId} and d.lease_until = ${d.leaseUntil} and d.status = 'pending'`;

/** Delivered: the row is done and the webhook healthy again. False when the lease was lost meanwhile. */
export async function markDelivered(db: Database, d: ClaimedDelivery, workerId: string, now: Date): Promise<boolean> {
  return db.tx(async (trx) => {
    const done =
      await sql`update webhook_delivery d set status = 'delivered', delivered_at = ${now}, attempts = attempts + 1,
        lease_until = null, locked_by = null, last_error = null
      where ${held(d, workerId)} returning d.seq`.execute(trx);
    await sql`update webhook set last_success_at = ${now}, failing_since = null, consecutive_failures = 0,
      circuit_open_until = null where id = ${d.webhookId}`.execute(trx);
    return done.rows.length > 0;
  });
}

/**
 * Failed attempt: try again at `retryAt`; the webhook remembers since when it has been failing,
 * and its circuit stays open for `circuitDelayMs(consecutive failures)`: no delivery of it is
 * claimed meanwhile, for any mailbox (they wait, none is dropped).
 */
export async function markFailed(
  db: Database,
  d: ClaimedDelivery,
  workerId: string,
  error: string,
  retryAt: Date,
  now: Date,
  circuitDelayMs: (consecutiveFailures: number) => number,
): Promise<{ failingSince: Date }> {
  return db.tx(async (trx) => {
    await sql`update webhook_delivery d set attempts = attempts + 1, next_attempt_at = ${retryAt}, lease_until = null,
        locked_by = null, last_error = ${error.slice(0, 1000)}
      where ${held(d, workerId)}`.execute(trx);
    const w = (
      await sql<{ failing_since: string; consecutive_failures: number }>`update webhook
        set failing_since = coalesce(failing_since, ${now}), consecutive_failures = consecutive_failures + 1,
          last_failure_at = ${now}, last_error = ${error.slice(0, 1000)}
      where id = ${d.webhookId} returning failing_since, consecutive_failures`.execute(trx)
    ).rows[0];
    if (!w) return { failingSince: now };
    const reopen = new Date(now.getTime() + circuitDelayMs(w.consecutive_failures));
    await sql`update webhook set circuit_open_until = ${reopen} where id = ${d.webhookId}`.execute(trx);
    return { failingSince: new Date(w.failing_since) };
  });
}

/**
 * Disables a webhook that kept failing: its pending deliveries are abandoned, and the mailboxes
 * they were for learn it through a `webhook.disabled` event (appended by the caller in `trx`).
 * Returns those mailboxes; empty when it was already disabled.
 */
export async function disableWebhook(trx: Sql, webhookId: string, reason: string, now: Date): Promise<string[]> {
  const w = await sql`update webhook set disabled_at = ${now}, disabled_reason = ${reason}
    where id = ${webhookId} and disabled_at is null returning id`.execute(trx);
  if (w.rows.length === 0) return [];
  const rows = (
    await sql<{
      mailbox_id: string;
    }>`update webhook_delivery set status = 'abandoned', lease_until = null, locked_by = null
      where webhook_id = ${webhookId} and status = 'pending' returning mailbox_id`.execute(trx)
  ).rows;
  return [...new Set(rows.map((r) => r.mailbox_id))].sort();
}
