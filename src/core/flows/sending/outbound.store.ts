import { ID_PREFIX, newId } from '../../base/ids.js';
import { insertContactsSql } from '../policy/contacts.store.js';
import type { MailboxRef } from '../../access/principal.js';
import { snippetOf } from '../../state/messages/snippet.js';
import { appendEvent } from '../../state/events/event-log.js';
import { type MailboxEvent } from '../../../types/mailbox-event.js';
import { claimAttachments, insertAttachment, type AttachmentFile } from '../../state/attachments/attachment.store.js';
import { settleAll, sql, type Database, type Sql } from '../../../storage/database.js';
import { lockMailboxRows } from '../../state/mailboxes/mailbox.store.js';
import type { Col, Narrow, Row } from '../../../storage/rows.js';
import type { Visibility } from '../../access/principal.js';
import { internetMessageIdFor } from '../delivery/threading.js';
import { createThread, touchThread } from '../delivery/thread.store.js';
import { bodyBytes, chargeStorage, settleReservation } from '../../state/quota/storage-quota.store.js';
import type { SendAccepted } from './send.schemas.js';
import type { SendActor } from '../policy/outbound-policy.js';

/** The message a reply answers, as the outbound row needs it. */
export interface ReplyParent {
  id: string;
  threadId: string;
  internetMessageId: string | null;
  /** References the reply carries: the parent's References plus the parent's Message-ID. */
  references: string[];
}

/**
 * One outbound message, channel-neutral: HTTP and MCP build it from JSON, SMTP submission from
 * the parsed MIME (then with its own Message-ID, identity and raw blob).
 */
export interface OutboundDraft {
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  bodyText: string | null;
  bodyHtml: string | null;
  attachmentIds: string[];
  /** Stored attachments copied onto this message (a forward keeps the original's; the blobs are shared). */
  forwardedAttachments?: readonly AttachmentFile[];
  parent: ReplyParent | null;
  /** The stored draft this message is sent from: the uploads it holds may be claimed (state/drafts). */
  fromDraftId?: string | null;
  /** Defaults to `<messageId@mailbox-domain>`. */
  internetMessageId?: string | null;
  rawBlobKey?: string | null;
  /** Size of the raw blob (SMTP submission), charged to the storage quota with the rest. */
  rawSizeBytes?: number;
  /** An active sender identity of the mailbox; defaults to the primary address and display name. */
  fromAddress?: string;
  fromDisplayName?: string;
}

export interface OutboundMeta {
  at: Date;
  /** The token that writes the message: it may not decide its own approval (approval.service). */
  sentByTokenId: string | null;
  idempotencyKey: string | null;
  requestHash: string | null;
  traceContext: string | null;
  /** Held by the approval gate: no outbox job until approved (docs/api.md, "Approval gate"). */
  held?: boolean;
  /** RFC 3834 Auto-Submitted value the composed message will carry (loop guard). */
  autoSubmitted?: string | null;
  /** The message id given out before the write (queued submission's 250); else a new one. */
  messageId?: string | undefined;
  /** Quota reserved at intake (queued submission): settled against the stored size instead of charged. */
  reservedBytes?: number | undefined;
  /** Counted without refusing: accepted (250) while its mailbox had no quota (queued submission). */
  quotaExempt?: boolean | undefined;
  /** A scheduled send: its job is due at sendAt and admitted then, in the name of `actor`. */
  schedule?: ScheduledSend | undefined;
}

/** Who scheduled a send and when it may leave (docs/workflow.md, "Scheduled sends"). */
export interface ScheduledSend {
  sendAt: Date;
  cancelOnReply: boolean;
  actor: SendActor;
}

export const bodyFormatOf = (text: string | null, html: string | null): 'text' | 'html' | 'text+html' =>
  text !== null && html !== null ? 'text+html' : html !== null ? 'html' : 'text';

/**
 * Writes everything a send commits to, inside the caller's transaction: the mailbox's outbound
 * counter, thread, message row, claimed attachments, one recipient row per distinct address, the
 * outbox job and the `message.sent` event. The message row goes in before the attachments are
 * claimed, so a concurrent retry with the same Idempotency-Key fails on the unique index (and
 * then replays) rather than on an attachment the first request already claimed.
 */
export async function writeOutbound(
  trx: Sql,
  mailbox: MailboxRef,
  draft: OutboundDraft,
  meta: OutboundMeta,
  /** The caller's own statements about this message (its audit entry), issued with the message's. */
  alongside?: (messageId: string) => Promise<unknown>,
): Promise<{ accepted: SendAccepted; event: MailboxEvent }> {
  const at = meta.at;
  // The sender's own copy counts against its storage quota: raw, bodies and the uploads it claims
  // (uploads are charged when claimed, not when uploaded; docs/api.md, "Storage quota"). The
  // charge raises the outbound counter and locks the mailbox row: mailbox row first, thread
  // after, the lock order every writer here keeps (see local-delivery). Uploads to claim are read
  // under that lock, so a concurrent send claiming the same upload reads after this one commits.
  if (draft.attachmentIds.length > 0) await lockMailboxRows(trx, [mailbox.id]);
  const forwarded = draft.forwardedAttachments ?? [];
  const attachmentCount = draft.attachmentIds.length + forwarded.length;
  const storedBytes =
    (draft.rawSizeBytes ?? 0) +
    bodyBytes(draft.bodyText, draft.bodyHtml) +
    forwarded.reduce((sum, a) => sum + a.sizeBytes, 0) +
    (await unclaimedBytes(trx, mailbox.id, draft.attachmentIds));
  const messageId = meta.messageId ?? newId(ID_PREFIX.message, at.getTime());
  const threadId = draft.parent ? draft.parent.threadId : newId(ID_PREFIX.thread, at.getTime());
  const internetMessageId = draft.internetMessageId ?? internetMessageIdFor(messageId, mailbox.address);
  const fromAddress = draft.fromAddress ?? mailbox.address;
  const fromDisplayName = draft.fromDisplayName ?? mailbox.displayName;
  const held = meta.held === true;
  const schedule = held ? undefined : meta.schedule;
  const state = held ? 'held' : schedule ? 'scheduled' : 'queued';
  const accepted: SendAccepted = {
    messageId,
    threadId,
    status: held ? 'pending_approval' : schedule ? 'scheduled' : 'queued',
    queuedAtTs: at.getTime(),
    ...(schedule ? { sendAtTs: schedule.sendAt.getTime() } : {}),
  };
  // Issued together, in lock order (mailbox row first, thread after), and awaited together: one
  // round trip when pipelined (Database.writeTx). A refusal (quota, an upload) fails the whole
  // transaction, which the caller owns and rolls back.
  const written = [
    meta.reservedBytes === undefined
      ? chargeStorage(trx, mailbox.id, storedBytes, { countAs: 'outbound', exempt: meta.quotaExempt === true })
      : settleReservation(trx, mailbox.id, meta.reservedBytes, storedBytes, 'outbound'),
    draft.parent
      ? touchThread(trx, threadId, at, 'outbound')
      : createThread(trx, { id: threadId, mailboxId: mailbox.id, subject: draft.subject, at, direction: 'outbound' }),
    // The sender's own copy is born read: nobody needs to be told about mail they wrote.
    sql`insert into message (id, mailbox_id, thread_id, direction, subject, from_address, from_display_name,
      to_addresses, cc_addresses, bcc_addresses, mailbox_address, attachment_count, body_text, body_html, body_format,
      raw_blob_key, internet_message_id, in_reply_to_message_id, references_header, is_read, read_at,
      delivery_status, idempotency_key, request_hash, created_at, received_at, sent_at, approval_status, auto_submitted,
      stored_bytes, sent_by_token_id, send_at, cancel_on_reply, snippet)
    values (${messageId}, ${mailbox.id}, ${threadId}, 'outbound', ${draft.subject}, ${fromAddress}, ${fromDisplayName},
      ${draft.to}::text[], ${draft.cc}::text[], ${draft.bcc}::text[], ${mailbox.address}, ${attachmentCount},
      ${draft.bodyText}, ${draft.bodyHtml}, ${bodyFormatOf(draft.bodyText, draft.bodyHtml)},
      ${draft.rawBlobKey ?? null}, ${internetMessageId}, ${draft.parent?.id ?? null}, ${draft.parent?.references ?? []}::text[], true, ${at},
      ${state}, ${meta.idempotencyKey}, ${meta.requestHash}, ${at}, null, ${at}, ${held ? 'pending' : null},
      ${meta.autoSubmitted ?? null}, ${storedBytes}, ${meta.sentByTokenId}, ${schedule?.sendAt ?? null}, ${schedule?.cancelOnReply ?? false}, ${snippetOf(draft.bodyText)})`.execute(
      trx,
    ),
    claimAttachments(trx, mailbox.id, messageId, draft.attachmentIds, draft.fromDraftId ?? null),
    ...forwarded.map((a) => insertAttachment(trx, { ...a, mailboxId: mailbox.id, messageId, at })),
    insertRecipients(trx, mailbox.id, messageId, recipientsOf(draft), state, at),
    held ? undefined : insertOutboxJob(trx, messageId, mailbox.id, meta.traceContext, at, schedule),
  ];
  const event = appendEvent(
    trx,
    mailbox.id,
    held ? 'message.approval-required' : 'message.sent',
    {
      ...accepted,
      direction: 'outbound',
      subject: draft.subject,
      fromAddress,
      toAddresses: draft.to,
      ccAddresses: draft.cc,
      bccAddresses: draft.bcc,
      attachmentCount,
      deliveryStatus: state,
      inReplyToMessageId: draft.parent?.id ?? null,
      origin: 'internal',
      authenticated: true,
    },
    at,
  );
  await settleAll([...written, event, alongside?.(messageId)]);
  return { accepted, event: await event };
}

/** Bytes of the caller's uploads among `ids` that no message claimed yet (claimAttachments checks the ids). */
async function unclaimedBytes(trx: Sql, mailboxId: string, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const row = (
    await sql<{ total: unknown }>`select coalesce(sum(size_bytes), 0) as total from attachment
      where mailbox_id = ${mailboxId} and message_id is null and id = any(${[...ids]}::text[])`.execute(trx)
  ).rows[0];
  return Number(row?.total ?? 0);
}

/** The worker's job for a message: at send, or in the approving transaction of a held one. */
export async function insertOutboxJob(
  trx: Sql,
  messageId: string,
  mailboxId: string,
  traceContext: string | null,
  at: Date,
  /** A scheduled send's job is not claimed before sendAt (the claim's run_after), and is admitted then. */
  schedule?: ScheduledSend,
): Promise<void> {
  await sql`insert into outbox_job (id, message_id, mailbox_id, status, attempts, run_after, trace_context, created_at, updated_at,
      admit_token_id, admit_channel)
    values (${newId(ID_PREFIX.job, at.getTime())}, ${messageId}, ${mailboxId}, 'pending', 0, ${schedule?.sendAt ?? at}, ${traceContext}, ${at}, ${at},
      ${schedule?.actor.tokenId ?? null}, ${schedule?.actor.channel ?? null})`.execute(trx);
}

/** One delivery per distinct address; an address in To and Cc is delivered once, as To. */
export function recipientsOf(
  draft: Pick<OutboundDraft, 'to' | 'cc' | 'bcc'>,
): { address: string; kind: 'to' | 'cc' | 'bcc' }[] {
  const seen = new Map<string, 'to' | 'cc' | 'bcc'>();
  for (const [kind, list] of [
    ['to', draft.to],
    ['cc', draft.cc],
    ['bcc', draft.bcc],
  ] as const) {
    for (const address of list) if (!seen.has(address)) seen.set(address, kind);
  }
  return [...seen].map(([address, kind]) => ({ address, kind }));
}

export type ReplyParentRow = Narrow<
  Row<
    'message',
    | 'id'
    | 'mailbox_id'
    | 'thread_id'
    | 'subject'
    | 'from_address'
    | 'to_addresses'
    | 'cc_addresses'
    | 'reply_to_addresses'
    | 'internet_message_id'
    | 'references_header'
  > & { direction: Col<'message', 'direction'> },
  { direction: 'inbound' | 'outbound' }
>;

/** A live message the caller may see (a mailbox token its mailbox, a domain token its domain), as a reply needs it. */
export async function replyParentRow(
  db: Database,
  visibility: Visibility,
  messageId: string,
): Promise<ReplyParentRow | undefined> {
  const scope =
    visibility.kind === 'mailbox'
      ? sql`m.mailbox_id = ${visibility.mailboxId}`
      : sql`mb.domain_id = ${visibility.domainId}`;
  return db.one(sql<ReplyParentRow>`select m.id, m.mailbox_id, m.thread_id, m.direction, m.subject, m.from_address, m.to_addresses, m.cc_addresses, m.reply_to_addresses, m.internet_message_id, m.references_header
    from message m join mailbox mb on mb.id = m.mailbox_id
    where m.id = ${messageId} and m.deleted_at is null and ${scope}`);
}

/** Every address the mailbox answers to or sends as: primary, active aliases, active sender identities (normalized). */
export async function ownAddresses(db: Database, mailboxId: string): Promise<Set<string>> {
  const rows = await db.rows(sql<{ address: string }>`select address from mailbox where id = ${mailboxId}
    union select address from mailbox_alias where mailbox_id = ${mailboxId} and is_active
    union select address from sender_identity where mailbox_id = ${mailboxId} and is_active`);
  return new Set(rows.map((r) => r.address.trim().toLowerCase()));
}

export type IdempotentRow = Row<
  'message',
  'id' | 'thread_id' | 'request_hash' | 'created_at' | 'approval_status' | 'send_at'
>;

/** The message a mailbox sent under an Idempotency-Key, if any. */
export async function messageByIdempotencyKey(
  db: Database,
  mailboxId: string,
  key: string,
): Promise<IdempotentRow | undefined> {
  return db.one(sql<IdempotentRow>`
    select id, thread_id, request_hash, created_at, approval_status, send_at from message
    where mailbox_id = ${mailboxId} and idempotency_key = ${key}`);
}

/**
 * The message sent under an Idempotency-Key with this fingerprint in any mailbox the caller sees
 * (a draft's send retried after the draft is gone: the fingerprint names the draft, so at most
 * one mailbox can hold it).
 */
export async function messageByRequestHash(
  db: Database,
  visibility: Visibility,
  key: string,
  hash: string,
): Promise<IdempotentRow | undefined> {
  const scope =
    visibility.kind === 'mailbox'
      ? sql`m.mailbox_id = ${visibility.mailboxId}`
      : sql`mb.domain_id = ${visibility.domainId}`;
  return db.one(sql<IdempotentRow>`
    select m.id, m.thread_id, m.request_hash, m.created_at, m.approval_status, m.send_at
    from message m join mailbox mb on mb.id = m.mailbox_id
    where m.idempotency_key = ${key} and m.request_hash = ${hash} and ${scope} limit 1`);
}

/**
 * Every recipient row of a message in one statement, which also records the recipients as contacts
 * of the mailbox (contacts.store.ts) unless the message is held: a held message's recipients
 * become contacts only when it is approved (approval.service).
 */
function insertRecipients(
  trx: Sql,
  mailboxId: string,
  messageId: string,
  recipients: readonly { address: string; kind: string }[],
  state: 'held' | 'queued' | 'scheduled',
  at: Date,
) {
  const ids = recipients.map(() => newId(ID_PREFIX.recipient, at.getTime()));
  return sql`with recipient as (
      insert into message_recipient (id, message_id, address, kind, status, attempts, updated_at)
      select r.id, ${messageId}::text, r.address, r.kind, ${state}::text, 0, ${at}::timestamptz
      from unnest(${ids}::text[], ${recipients.map((r) => r.address)}::text[], ${recipients.map((r) => r.kind)}::text[])
        as r(id, address, kind)
      returning address)
    ${insertContactsSql(mailboxId, sql`select address from recipient where ${state === 'queued'}::boolean`, at)}`.execute(
    trx,
  );
}
