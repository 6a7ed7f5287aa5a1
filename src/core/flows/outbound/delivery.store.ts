import { sql, type Database, type Sql } from '../../../storage/database.js';
import type { Col, Row } from '../../../storage/rows.js';
import type { ClaimedJob } from './outbox-job.store.js';

/** The queries of outbound delivery: recipients' states, the message a job delivers, DKIM keys. */

/** Per recipient: queued (not tried or waiting for a transport), deferred (temporary failure), or final. */
export type RecipientStatus = 'queued' | 'deferred' | 'delivered' | 'failed';

export type PendingRecipientRow = Row<'message_recipient', 'id' | 'address'>;

/** The statuses of every recipient of a message. */
export async function recipientStatuses(trx: Sql, messageId: string): Promise<RecipientStatus[]> {
  const rows = (
    await sql<{
      status: RecipientStatus;
    }>`select status from message_recipient where message_id = ${messageId}`.execute(trx)
  ).rows;
  return rows.map((r) => r.status);
}

export async function setMessageDeliveryStatus(trx: Sql, messageId: string, status: RecipientStatus): Promise<void> {
  await sql`update message set delivery_status = ${status} where id = ${messageId}`.execute(trx);
}

/** Locks the recipient and its message; the recipient's status, undefined when there is no such recipient. */
export async function lockRecipient(trx: Sql, recipientId: string): Promise<RecipientStatus | undefined> {
  const row = (
    await sql<{
      status: RecipientStatus;
    }>`select r.status from message_recipient r join message m on m.id = r.message_id
    where r.id = ${recipientId} for update`.execute(trx)
  ).rows[0];
  return row?.status;
}

/** Stores one recipient's new status and the remote reply, counting the attempt. */
export async function updateRecipientStatus(
  trx: Sql,
  recipientId: string,
  status: RecipientStatus,
  reply: string,
  at: Date,
): Promise<void> {
  await sql`update message_recipient set status = ${status}, remote_reply = ${reply}, attempts = attempts + 1, updated_at = ${at},
    delivered_at = ${status === 'delivered' ? at : null} where id = ${recipientId}`.execute(trx);
}

/** The recipients of a message still to deliver (queued or deferred), in id order. */
export async function pendingRecipients(db: Database, messageId: string): Promise<PendingRecipientRow[]> {
  return db.rows(sql<PendingRecipientRow>`select id, address from message_recipient
    where message_id = ${messageId} and status in ('queued', 'deferred') order by id`);
}

export type OutboundMessageRow = Row<
  'message',
  | 'id'
  | 'mailbox_id'
  | 'from_address'
  | 'from_display_name'
  | 'to_addresses'
  | 'cc_addresses'
  | 'subject'
  | 'body_text'
  | 'body_html'
  | 'internet_message_id'
  | 'in_reply_to_message_id'
  | 'references_header'
  | 'sent_at'
  | 'created_at'
  | 'raw_blob_key'
  | 'sent_raw_blob_key'
  | 'auto_submitted'
> & { domain_id: Col<'mailbox', 'domain_id'> };

/** An outbound message with its mailbox's domain, as a delivery job sends it. */
export async function outboundMessage(db: Database, messageId: string): Promise<OutboundMessageRow | undefined> {
  return db.one(sql<OutboundMessageRow>`select m.id, m.mailbox_id, mb.domain_id, m.from_address, m.from_display_name, m.to_addresses, m.cc_addresses, m.subject, m.body_text, m.body_html,
      m.internet_message_id, m.in_reply_to_message_id, m.references_header, m.sent_at, m.created_at, m.raw_blob_key,
      m.sent_raw_blob_key, m.auto_submitted
    from message m join mailbox mb on mb.id = m.mailbox_id where m.id = ${messageId} and m.direction = 'outbound'`);
}

/**
 * Names the blob holding a message's source as it left, unless one is named already (a second
 * worker, or an earlier attempt, got there first) or the message is gone: false then.
 */
export async function claimSentRaw(db: Database, messageId: string, blobKey: string): Promise<boolean> {
  const row = await db.one(sql<{ id: string }>`update message set sent_raw_blob_key = ${blobKey}
      where id = ${messageId} and sent_raw_blob_key is null returning id`);
  return row !== undefined;
}

/** The inbound copy of a message (by Message-ID) a mailbox already holds, if any. */
export async function inboundCopy(
  trx: Sql,
  mailboxId: string,
  internetMessageId: string,
): Promise<Row<'message', 'id'> | undefined> {
  return (
    await sql<Row<'message', 'id'>>`select id from message
      where mailbox_id = ${mailboxId} and direction = 'inbound' and internet_message_id = ${internetMessageId} limit 1`.execute(
      trx,
    )
  ).rows[0];
}

/** Moves a job's lease to `until` while this worker still holds it; false when the lease was lost. */
export async function extendLease(
  db: Database,
  job: ClaimedJob,
  workerId: string,
  until: Date,
  now: Date,
): Promise<boolean> {
  const row = await db.one(sql<
    Row<'outbox_job', 'id'>
  >`update outbox_job set lease_until = ${until}, updated_at = ${now}
    where id = ${job.id} and locked_by = ${workerId} and lease_until = ${job.leaseUntil} and status = 'pending' returning id`);
  return row !== undefined;
}

export type DkimKeyRow = Row<'dkim_key', 'selector' | 'private_key_cipher' | 'public_key'> & {
  name: Col<'domain', 'name'>;
};

/** The DKIM key of a domain, with the domain's name. */
export async function dkimKeyOf(db: Database, domainId: string): Promise<DkimKeyRow | undefined> {
  return db.one(sql<DkimKeyRow>`
      select d.name, k.selector, k.private_key_cipher, k.public_key from dkim_key k join domain d on d.id = k.domain_id where k.domain_id = ${domainId}`);
}

/** Stores a domain's DKIM key unless it has one already (the first writer wins). */
export async function insertDkimKey(
  db: Database,
  key: { domainId: string; selector: string; privateKeyCipher: string; publicKey: string; at: Date },
): Promise<void> {
  await db.rows(sql`insert into dkim_key (domain_id, selector, algorithm, private_key_cipher, public_key, created_at)
      values (${key.domainId}, ${key.selector}, 'rsa-sha256', ${key.privateKeyCipher}, ${key.publicKey}, ${key.at}) on conflict (domain_id) do nothing`);
}

/** Which of `recipients` of a message are deferred now (the simulator's `defer@` is delivered on its second try). */
export async function deferredRecipients(db: Database, messageId: string, recipients: string[]): Promise<Set<string>> {
  const rows = await db.rows(sql<{ address: string }>`select address from message_recipient
    where message_id = ${messageId} and address = any(${recipients}::text[]) and status = 'deferred'`);
  return new Set(rows.map((r) => r.address));
}
