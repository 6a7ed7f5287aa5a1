import { jsonValue, sql, type Database, type Sql } from '../../storage/database.js';
import type { MailboxEvent } from '../../types/mailbox-event.js';

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
}

/**
 * Claims the due delivery that heads its (webhook, mailbox) queue, under a lease: FOR UPDATE SKIP
 * LOCKED keeps two workers off one row, the lease keeps a second worker off it until the first
 * is done or dead, and "no earlier pending row" keeps each mailbox's events in order.
 */
export async function claimDelivery(
  db: Database,
  workerId: string,
  leaseMs: number,
  now: Date,
): Promise<ClaimedDelivery | undefined> {
  const until = new Date(now.getTime() + leaseMs);
  return db.tx(async (trx) => {
    const row = (
      await sql<{
        webhook_id: string;
        mailbox_id: string;
        seq: string | number;
      }>`select d.webhook_id, d.mailbox_id, d.seq
      from webhook_delivery d
      where d.status = 'pending' and d.next_attempt_at <= ${now} and (d.lease_until is null or d.lease_until < ${now})
        and not exists (select 1 from webhook_delivery e where e.webhook_id = d.webhook_id and e.mailbox_id = d.mailbox_id
          and e.status = 'pending' and e.seq < d.seq)
      order by d.next_attempt_at, d.seq
      limit 1
      for update of d skip locked`.execute(trx)
    ).rows[0];
    if (!row) return undefined;
    const claimed = (
      await sql<{
        payload: MailboxEvent | string;
        attempts: number;
        url: string;
        secret_cipher: string;
        failing_since: string | null;
      }>`update webhook_delivery d set lease_until = ${until}, locked_by = ${workerId}
      from webhook w
      where w.id = d.webhook_id and d.webhook_id = ${row.webhook_id} and d.mailbox_id = ${row.mailbox_id}
        and d.seq = ${row.seq}
      returning d.payload, d.attempts, w.url, w.secret_cipher, w.failing_since`.execute(trx)
    ).rows[0]!;
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
    await sql`update webhook set last_success_at = ${now}, failing_since = null where id = ${d.webhookId}`.execute(trx);
    return done.rows.length > 0;
  });
}

/** Failed attempt: try again at `retryAt`; the webhook remembers since when it has been failing. */
export async function markFailed(
  db: Database,
  d: ClaimedDelivery,
  workerId: string,
  error: string,
  retryAt: Date,
  now: Date,
): Promise<{ failingSince: Date }> {
  return db.tx(async (trx) => {
    await sql`update webhook_delivery d set attempts = attempts + 1, next_attempt_at = ${retryAt}, lease_until = null,
        locked_by = null, last_error = ${error.slice(0, 1000)}
      where ${held(d, workerId)}`.execute(trx);
    const w = (
      await sql<{ failing_since: string }>`update webhook set failing_since = coalesce(failing_since, ${now}),
        last_failure_at = ${now}, last_error = ${error.slice(0, 1000)}
      where id = ${d.webhookId} returning failing_since`.execute(trx)
    ).rows[0];
    return { failingSince: w ? new Date(w.failing_since) : now };
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
