import { jsonValue, settleAll, sql, type Database, type Sql } from '../../../storage/database.js';
import { chargeStorage, releaseStorage } from '../../quota/storage-quota.store.js';
import type { InboundEnvelope, InboundRecipient } from './inbound-envelope.js';

/** A queued message as a worker claimed it. */
export interface QueuedInbound {
  id: string;
  envelope: InboundEnvelope;
  receivedAt: Date;
  reservedBytes: number;
  raw: Buffer;
  attempts: number;
  /** The claim: only the worker holding it may finish, postpone or fail the row. */
  lockedBy: string;
  leaseUntil: Date;
}

/**
 * Writes the queue row of an accepted message and reserves `reservedBytes` in each recipient
 * mailbox that has a storage quota, in the caller's transaction (the 250 follows its commit). The
 * reservation refuses like any charge (QUOTA_EXCEEDED, 552 5.2.2): the counter never passes the
 * quota, and the delivery settles it against what the message really occupies. A mailbox
 * without a quota reserves nothing (no statement); its delivery charges like any other.
 */
export async function enqueueInbound(
  trx: Sql,
  row: { id: string; envelope: InboundEnvelope; receivedAt: Date; reservedBytes: number; raw: Buffer },
): Promise<void> {
  const e = row.envelope;
  await settleAll([
    ...reservingMailboxes(e).map((id) => chargeStorage(trx, id, row.reservedBytes)),
    sql`insert into inbound_queue (id, status, received_at, mail_from, recipients, client_address, helo, tls,
        reserved_bytes, raw, attempts, run_after)
      values (${row.id}, 'pending', ${row.receivedAt}, ${e.mailFrom}, ${JSON.stringify(e.recipients)}::jsonb,
        ${e.clientAddress}, ${e.helo}, ${e.tls}, ${row.reservedBytes}, ${row.raw}, 0, ${row.receivedAt})`.execute(trx),
  ]);
}

/** The recipient mailboxes with a storage quota, in lock order: those a queued message reserves in. */
function reservingMailboxes(e: InboundEnvelope): string[] {
  return [...new Set(e.recipients.filter((r) => r.quotaLimited !== false).map((r) => r.mailboxId))].sort();
}

/** What the queued message reserved in `mailboxId` at intake. */
export function reservedIn(q: QueuedInbound, mailboxId: string): number {
  return reservingMailboxes(q.envelope).includes(mailboxId) ? q.reservedBytes : 0;
}

/**
 * Claims up to `limit` due rows for `lockedBy` under a lease (FOR UPDATE SKIP LOCKED, like outbox
 * jobs): a row whose worker died is due again when its lease expires.
 */
export async function claimInbound(
  db: Database,
  lockedBy: string,
  limit: number,
  leaseMs: number,
  now: Date,
): Promise<QueuedInbound[]> {
  const leaseUntil = new Date(now.getTime() + leaseMs);
  const rows = await db.rows(sql<{
    id: string;
    received_at: unknown;
    mail_from: string;
    recipients: unknown;
    client_address: string;
    helo: string;
    tls: boolean;
    reserved_bytes: unknown;
    raw: Buffer | Uint8Array;
    attempts: number;
  }>`update inbound_queue set lease_until = ${leaseUntil}, locked_by = ${lockedBy}, attempts = attempts + 1
    where id in (select id from inbound_queue where status = 'pending' and run_after <= ${now}
                 and (lease_until is null or lease_until <= ${now})
                 order by run_after, id limit ${limit} for update skip locked)
    returning id, received_at, mail_from, recipients, client_address, helo, tls, reserved_bytes, raw, attempts`);
  return rows
    .map((r) => ({
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
      leaseUntil,
    }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Thrown inside a delivery transaction whose queue row is no longer this worker's: roll back. */
export class QueueClaimLost extends Error {
  constructor(id: string) {
    super(`queued message ${id} is no longer claimed by this worker`);
  }
}

/**
 * Removes the delivered row inside the transaction that stores its messages, so a message is
 * stored exactly once: a worker whose lease another worker took over finds no row and rolls back.
 */
export async function removeDelivered(trx: Sql, q: QueuedInbound): Promise<void> {
  const deleted = await sql`delete from inbound_queue where id = ${q.id} and locked_by = ${q.lockedBy}
    and lease_until = ${q.leaseUntil}`.execute(trx);
  if (Number(deleted.numAffectedRows ?? 0) !== 1) throw new QueueClaimLost(q.id);
}

/** Returns a row to the queue, due again at `runAfter`, with the reason kept in last_error. */
export async function postponeInbound(
  db: Database,
  q: QueuedInbound,
  runAfter: Date,
  lastError: string,
): Promise<void> {
  await db.rows(sql`update inbound_queue set lease_until = null, run_after = ${runAfter}, last_error = ${lastError.slice(0, 2000)}
    where id = ${q.id} and locked_by = ${q.lockedBy} and lease_until = ${q.leaseUntil}`);
}

/**
 * A message that can never be delivered (a refusal found after the 250): the row stays as
 * `failed` with its reason for an operator, and its quota reservations are given back.
 */
export async function failInbound(db: Database, q: QueuedInbound, reason: string): Promise<void> {
  await db.writeTx(async (trx) => {
    const updated =
      await sql`update inbound_queue set status = 'failed', lease_until = null, last_error = ${reason.slice(0, 2000)}
      where id = ${q.id} and locked_by = ${q.lockedBy} and lease_until = ${q.leaseUntil} and status = 'pending'`.execute(
        trx,
      );
    if (Number(updated.numAffectedRows ?? 0) !== 1) return;
    for (const id of reservingMailboxes(q.envelope)) await releaseStorage(trx, id, q.reservedBytes);
  });
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

/** Deletes a row none of whose mailboxes exists any more (nothing to deliver, no reservation left). */
export async function dropUndeliverable(db: Database, q: QueuedInbound): Promise<void> {
  await db.rows(
    sql`delete from inbound_queue where id = ${q.id} and locked_by = ${q.lockedBy} and lease_until = ${q.leaseUntil}`,
  );
}
