import { jsonValue, sql, type Database, type Sql } from '../../../storage/database.js';
import { insertReserving, releaseStorage } from '../../state/quota/storage-quota.store.js';
import { claimQueued, type ClaimedRow } from '../intake/intake-queue.store.js';
import type { HandoffClaim } from '../intake/local-handoff.js';
import type { InboundEnvelope, InboundRecipient } from './inbound-envelope.js';

/** A port 25 message queued at intake, as a worker claimed it. */
export interface QueuedInbound extends ClaimedRow {
  envelope: InboundEnvelope;
  receivedAt: Date;
  reservedBytes: number;
  raw: Buffer;
}

/**
 * Writes the queue row of an accepted message and reserves `reservedBytes` in each recipient
 * mailbox that has a storage quota, in one statement of the caller's transaction that fails on its
 * own (insertReserving; the 250 follows its commit). The reservation refuses like any charge
 * (QUOTA_EXCEEDED, 552 5.2.2): the counter never passes the quota, and the delivery settles it
 * against what the message really occupies. A mailbox without a quota reserves nothing; its
 * delivery charges like any other. With `claim` the row is written claimed for this process's
 * worker (LocalHandoff).
 */
export async function enqueueInbound(
  trx: Sql,
  row: { id: string; envelope: InboundEnvelope; receivedAt: Date; reservedBytes: number; raw: Buffer },
  claim: HandoffClaim | null = null,
): Promise<void> {
  const e = row.envelope;
  await insertReserving(
    trx,
    reservingMailboxes(e),
    row.reservedBytes,
    (reservedBytes) => sql`insert into inbound_queue (id, status, received_at, mail_from, recipients,
        client_address, helo, tls, reserved_bytes, raw, attempts, run_after, locked_by, lease_until)
      values (${row.id}, 'pending', ${row.receivedAt}, ${e.mailFrom}, ${JSON.stringify(e.recipients)}::jsonb,
        ${e.clientAddress}, ${e.helo}, ${e.tls}, ${reservedBytes}, ${row.raw}, ${claim ? 1 : 0}, ${row.receivedAt},
        ${claim?.lockedBy ?? null}, ${claim?.leaseUntil ?? null})`,
  );
}

/** The recipient mailboxes with a storage quota, in lock order: those a queued message reserves in. */
function reservingMailboxes(e: InboundEnvelope): string[] {
  return [...new Set(e.recipients.filter((r) => r.quotaLimited !== false).map((r) => r.mailboxId))].sort();
}

/** What the queued message reserved in `mailboxId` at intake. */
export function reservedIn(q: QueuedInbound, mailboxId: string): number {
  return reservingMailboxes(q.envelope).includes(mailboxId) ? q.reservedBytes : 0;
}

interface InboundQueueRow {
  id: string;
  attempts: number;
  received_at: unknown;
  mail_from: string;
  recipients: unknown;
  client_address: string;
  helo: string;
  tls: boolean;
  reserved_bytes: unknown;
  raw: Buffer | Uint8Array;
}

const COLUMNS = ['received_at', 'mail_from', 'recipients', 'client_address', 'helo', 'tls', 'reserved_bytes', 'raw'];

/** Claims up to `limit` due rows for `lockedBy` under a lease (see claimQueued). */
export async function claimInbound(
  db: Database,
  lockedBy: string,
  limit: number,
  leaseMs: number,
  now: Date,
): Promise<QueuedInbound[]> {
  const claimed = await claimQueued<InboundQueueRow>(db, 'inbound_queue', COLUMNS, { lockedBy, limit, leaseMs, now });
  return claimed.rows.map((r) => ({
    id: r.id,
    envelope: {
      mailFrom: r.mail_from,
      recipients: jsonValue(r.recipients) as InboundRecipient[],
      clientAddress: r.client_address,
      helo: r.helo,
      tls: r.tls,
    },
    receivedAt: new Date(r.received_at as string),
    reservedBytes: Number(r.reserved_bytes),
    raw: Buffer.isBuffer(r.raw) ? r.raw : Buffer.from(r.raw),
    attempts: Number(r.attempts),
    lockedBy,
    leaseUntil: claimed.leaseUntil,
  }));
}

/** Gives back what a queued message reserved in each of its mailboxes (it is set aside undelivered). */
export async function releaseReservations(trx: Sql, q: QueuedInbound): Promise<void> {
  for (const id of reservingMailboxes(q.envelope)) await releaseStorage(trx, id, q.reservedBytes);
}

/**
 * `q` without the recipients whose mailbox was deleted while it waited (their copies have nothing
 * to go to, as if deleted right after delivery); `q` itself when none was.
 */
export async function withoutDeletedMailboxes(db: Database, q: QueuedInbound): Promise<QueuedInbound> {
  const ids = [...new Set(q.envelope.recipients.map((r) => r.mailboxId))];
  const rows = await db.rows(sql<{ id: string }>`select id from mailbox where id = any(${ids}::text[])`);
  if (rows.length === ids.length) return q;
  const live = new Set(rows.map((r) => r.id));
  return { ...q, envelope: { ...q.envelope, recipients: q.envelope.recipients.filter((r) => live.has(r.mailboxId)) } };
}
