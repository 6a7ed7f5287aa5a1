import { defineEntity, p } from '@mikro-orm/core';
import { MailboxEntity } from './mailbox.entity.js';
import { DraftEntity } from './draft.entity.js';

/** A conversation inside one mailbox. */
export const ThreadEntity = defineEntity({
  name: 'Thread',
  tableName: 'thread',
  // Thread workflow state (migration 20270407000000): the state list and the follow-up due scan.
  indexes: [
    {
      name: 'thread_state_list_idx',
      expression:
        'create index "thread_state_list_idx" on "thread" ("mailbox_id", "state", "last_message_at" desc, "id" desc)',
    },
    {
      name: 'thread_list_idx',
      expression: 'create index "thread_list_idx" on "thread" ("mailbox_id", "last_message_at" desc, "id" desc)',
    },
    {
      name: 'thread_follow_up_due_idx',
      expression:
        'create index "thread_follow_up_due_idx" on "thread" ("follow_up_at") where "state" = \'awaiting_reply\' and "follow_up_notified_at" is null',
    },
  ],
  properties: {
    id: p.string().primary().length(40),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().index().deleteRule('cascade'),
    subject: p.text().default(''),
    createdAt: p.datetime(3),
    lastMessageAt: p.datetime(3),
    /** open, awaiting_reply, needs_human or closed (docs/workflow.md, "Thread state"). */
    state: p.string().length(16).default('open'),
    awaitingReplySince: p.datetime(3).nullable(),
    followUpAt: p.datetime(3).nullable(),
    /** Set with the one thread.follow-up-due event, in its transaction. */
    followUpNotifiedAt: p.datetime(3).nullable(),
  },
});

/**
 * One message, inbound or outbound, owned by exactly one mailbox. The list index is
 * (mailbox, created_at desc, id desc) over rows not deleted, so a page is an index range scan.
 */
export const MessageEntity = defineEntity({
  name: 'Message',
  tableName: 'message',
  indexes: [
    {
      name: 'message_list_idx',
      expression:
        'create index "message_list_idx" on "message" ("mailbox_id", "created_at" desc, "id" desc) where "deleted_at" is null and not "screening_held"',
    },
    {
      name: 'message_list_dir_idx',
      expression:
        'create index "message_list_dir_idx" on "message" ("mailbox_id", "direction", "created_at" desc, "id" desc) where "deleted_at" is null and not "screening_held"',
    },
    { name: 'message_thread_idx', properties: ['thread', 'createdAt'] },
    // cancelOnReply: a thread's scheduled sends, looked up at each inbound arrival (migration 20270413000000).
    {
      name: 'message_scheduled_thread_idx',
      expression:
        'create index "message_scheduled_thread_idx" on "message" ("thread_id") where "delivery_status" = \'scheduled\'',
    },
    { name: 'message_internet_id_idx', properties: ['mailbox', 'internetMessageId'] },
    // The storage sweeper asks whether any row names a blob (migration 20261220000000).
    {
      name: 'message_raw_blob_key_idx',
      expression:
        'create index "message_raw_blob_key_idx" on "message" ("raw_blob_key") where "raw_blob_key" is not null',
    },
    {
      name: 'message_sent_raw_blob_key_idx',
      expression:
        'create index "message_sent_raw_blob_key_idx" on "message" ("sent_raw_blob_key") where "sent_raw_blob_key" is not null',
    },
    // Outbound policy (migration 20261223000000): the approval queue and its expiry, and
    // "was this counterparty ever heard from".
    {
      name: 'message_approval_idx',
      expression:
        'create index "message_approval_idx" on "message" ("mailbox_id", "created_at" desc, "id" desc) where "approval_status" = \'pending\' and "deleted_at" is null',
    },
    {
      name: 'message_approval_due_idx',
      expression:
        'create index "message_approval_due_idx" on "message" ("created_at") where "approval_status" = \'pending\'',
    },
    // The scheduled sends that have not left (GET /api/messages?status=scheduled; migration 20270426000000).
    {
      name: 'message_scheduled_idx',
      expression:
        'create index "message_scheduled_idx" on "message" ("mailbox_id", "created_at" desc, "id" desc) where "delivery_status" = \'scheduled\' and "deleted_at" is null',
    },
    {
      name: 'message_inbound_from_idx',
      expression:
        'create index "message_inbound_from_idx" on "message" ("mailbox_id", "from_address") where "direction" = \'inbound\'',
    },
    // Full-text search within one mailbox (migrations 20270110000000, 20270126000000: btree_gin).
    {
      name: 'message_search_idx',
      expression: 'create index "message_search_idx" on "message" using gin ("mailbox_id", "search_vector")',
    },
    // Messages the search indexer has not reached yet (migration 20270201000000).
    {
      name: 'message_search_pending_idx',
      expression: 'create index "message_search_pending_idx" on "message" ("mailbox_id") where "search_vector" is null',
    },
    // Messages waiting for their reply text (migration 20270205000000, ReplyTextBackfill).
    {
      name: 'message_reply_text_pending_idx',
      expression:
        'create index "message_reply_text_pending_idx" on "message" ("id") where "extracted" is not null and not ("extracted" ? \'replyText\')',
    },
    // Inbound mail held by screening (migration 20270403000000): `?screening=held`, a page's held count.
    {
      name: 'message_held_idx',
      expression:
        'create index "message_held_idx" on "message" ("mailbox_id", "created_at" desc, "id" desc) where "screening_held" and "deleted_at" is null',
    },
  ],
  uniques: [{ name: 'message_idempotency_uq', properties: ['mailbox', 'idempotencyKey'] }],
  properties: {
    id: p.string().primary().length(40),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().deleteRule('cascade'),
    thread: () => p.manyToOne(ThreadEntity).mapToPk(),
    direction: p.string().length(16),
    subject: p.text().default(''),
    fromAddress: p.string().length(320),
    fromDisplayName: p.string().length(200).default(''),
    toAddresses: p.array(),
    ccAddresses: p.array(),
    /** Reply-To of an inbound message: where a reply-all goes instead of the sender (migration 20270406000000). */
    replyToAddresses: p.array().defaultRaw("'{}'"),
    bccAddresses: p.array(),
    mailboxAddress: p.string().length(320),
    attachmentCount: p.integer().default(0),
    /** The list's snippet, stored at write (null: written before snippets were stored). */
    snippet: p.string().length(200).nullable(),
    /** Bytes charged to the mailbox's storage quota for this message (raw, bodies, attachments). */
    storedBytes: p.bigint('number').defaultRaw('0'),
    bodyText: p.text().nullable(),
    bodyHtml: p.text().nullable(),
    bodyFormat: p.string().length(16),
    rawBlobKey: p.string().length(200).nullable(),
    /** An outbound message's source as it left, DKIM-signed (stored once by the delivery worker). */
    sentRawBlobKey: p.string().length(200).nullable(),
    internetMessageId: p.string().length(998).nullable(),
    inReplyToMessageId: p.string().length(40).nullable(),
    referencesHeader: p.array(),
    isRead: p.boolean().default(false),
    readAt: p.datetime(3).nullable(),
    deletedAt: p.datetime(3).nullable(),
    deliveryStatus: p.string().length(16).nullable(),
    idempotencyKey: p.string().length(200).nullable(),
    requestHash: p.string().length(64).nullable(),
    authResults: p.json().nullable(),
    /** Outbound held by the approval gate: pending, approved, rejected or expired; null when never held. */
    approvalStatus: p.string().length(16).nullable(),
    approvalDecidedAt: p.datetime(3).nullable(),
    approvalDecidedBy: p.string().length(40).nullable(),
    /** The token that wrote an outbound message (its own approvals are refused); null for inbound. */
    sentByTokenId: p.string().length(40).nullable(),
    /** RFC 3834 Auto-Submitted value the composed message carries (HTTP/MCP mail under the loop guard). */
    autoSubmitted: p.string().length(32).nullable(),
    /** What extraction found at ingest (codes, links, reply text); null for outbound and older mail. */
    extracted: p.json().nullable(),
    /** Inbound screening found at ingest ({ score, signals }); null for outbound and older mail. */
    screening: p.json().nullable(),
    /** Kept out of agent reads by the mailbox's holdAtScore until released (docs/screening.md). */
    screeningHeld: p.boolean().default(false),
    /**
     * Full-text search vector (SQL function message_search_vector of subject and body), filled
     * after the message is stored by the search indexer (migration 20270201000000); null until then.
     */
    searchVector: p.type('unknown').columnType('tsvector').nullable().lazy().ignoreSchemaChanges('type', 'extra'),
    createdAt: p.datetime(3),
    receivedAt: p.datetime(3).nullable(),
    sentAt: p.datetime(3).nullable(),
    /** A scheduled send's due time; nothing leaves before it (docs/workflow.md, "Scheduled sends"). */
    sendAt: p.datetime(3).nullable(),
    /** Cancelled when an inbound message arrives in its thread before it leaves. */
    cancelOnReply: p.boolean().default(false),
  },
});

/** Per-recipient delivery state of an outbound message. */
export const MessageRecipientEntity = defineEntity({
  name: 'MessageRecipient',
  tableName: 'message_recipient',
  // "Was this address ever written to" (outbound policy, migration 20261223000000).
  indexes: [{ name: 'message_recipient_address_idx', properties: ['address'] }],
  properties: {
    id: p.string().primary().length(40),
    message: () => p.manyToOne(MessageEntity).mapToPk().index().deleteRule('cascade'),
    address: p.string().length(320),
    kind: p.string().length(8),
    status: p.string().length(16),
    remoteReply: p.text().nullable(),
    attempts: p.integer().default(0),
    updatedAt: p.datetime(3),
    deliveredAt: p.datetime(3).nullable(),
  },
});

/** An attachment: staged by upload (message null) until a send claims it; a draft may hold it meanwhile. */
export const AttachmentEntity = defineEntity({
  name: 'Attachment',
  tableName: 'attachment',
  // For the storage sweeper: blob references, and unclaimed uploads past UPLOAD_TTL.
  indexes: [
    { name: 'attachment_blob_key_idx', properties: ['blobKey'] },
    {
      name: 'attachment_unclaimed_idx',
      expression: 'create index "attachment_unclaimed_idx" on "attachment" ("created_at") where "message_id" is null',
    },
  ],
  properties: {
    id: p.string().primary().length(40),
    mailbox: () => p.manyToOne(MailboxEntity).mapToPk().index().deleteRule('cascade'),
    message: () => p.manyToOne(MessageEntity).mapToPk().nullable().index().deleteRule('cascade'),
    filename: p.string().length(255),
    contentType: p.string().length(255),
    sizeBytes: p.bigint('number'),
    sha256: p.string().length(64),
    blobKey: p.string().length(200),
    createdAt: p.datetime(3),
    /** Content-ID without angle brackets, for `cid:` references (RFC 2392). */
    contentId: p.string().length(255).nullable(),
    disposition: p.string().length(10).default('attachment'),
    /** The draft holding this upload (migration 20270420000000): never swept while it does. */
    draft: () => p.manyToOne(DraftEntity).mapToPk().nullable().index().deleteRule('set null'),
  },
});

/**
 * Cache of extracted attachment text (migrations 20270110000200, 20270401000000): claimed
 * (`extracting`, with its deadline) before extraction, then its text or its failure.
 */
export const AttachmentTextEntity = defineEntity({
  name: 'AttachmentText',
  tableName: 'attachment_text',
  properties: {
    attachment: () => p.manyToOne(AttachmentEntity).mapToPk().primary().deleteRule('cascade').updateRule('no action'),
    status: p.string().length(16),
    text: p.text().nullable(),
    truncated: p.boolean().default(false),
    errorCode: p.string().length(40).nullable(),
    errorDetail: p.text().nullable(),
    failureReason: p.string().length(40).nullable(),
    deadlineAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
  },
});
