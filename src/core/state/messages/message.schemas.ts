import { z } from 'zod';
import { limitSchema } from '../../base/paging/cursor.js';
import { screeningViewSchema } from '../screening/screening.schemas.js';
import { threadStateSchema } from './thread-state.schemas.js';

// ---- inputs: the HTTP routes validate with the pieces, MCP tools with the composed inputs ----

/** Format is checked by resolveMailbox (400 MAILBOX_ADDRESS_INVALID), so the rule lives in the core. */
const mailboxAddress = z.string().trim().max(320).optional();
/** Unknown or over-long ids are simply not found (404), never a 400 that hints at id syntax. */
const id = z.string().trim().min(1).max(200);

export const DIRECTIONS = ['inbound', 'outbound'] as const;
export const directionSchema = z.enum(DIRECTIONS);
export type Direction = z.infer<typeof directionSchema>;

export const listMessagesInputSchema = z.object({
  mailboxAddress,
  limit: limitSchema,
  cursor: z.string().min(1).max(500).optional(),
  direction: directionSchema.optional(),
  /** `pending`: only outbound messages held for approval (docs/api.md, "Approval gate"). */
  approval: z.enum(['pending']).optional(),
  /** `held`: only inbound mail held by screening (docs/screening.md); a reviewer's list. */
  screening: z.enum(['held']).optional(),
  /** `scheduled`: only outbound messages waiting for their sendAt (docs/workflow.md, "Scheduled sends"). */
  status: z.enum(['scheduled']).optional(),
});
export type ListMessagesInput = z.infer<typeof listMessagesInputSchema>;

export const messageIdParamsSchema = z.object({ messageId: id });
export const threadIdParamsSchema = z.object({ threadId: id });
export const mailboxAddressQuerySchema = z.object({ mailboxAddress });

export const readStateBodySchema = z.object({ isRead: z.boolean(), mailboxAddress }).strict();
/** Bulk calls take 1..1000 ids (docs/contract.md, Wire format). */
const ids = z.array(id).min(1).max(1000);
export const bulkReadStateInputSchema = z.object({ ids, isRead: z.boolean(), mailboxAddress }).strict();
export const bulkDeleteInputSchema = z.object({ ids, mailboxAddress }).strict();

export const messageRefInputSchema = messageIdParamsSchema.extend(mailboxAddressQuerySchema.shape);
export const threadRefInputSchema = threadIdParamsSchema.extend(mailboxAddressQuerySchema.shape);
export const readStateInputSchema = messageIdParamsSchema.extend(readStateBodySchema.shape);

export type MessageRefInput = z.infer<typeof messageRefInputSchema>;
export type ThreadRefInput = z.infer<typeof threadRefInputSchema>;
export type ReadStateInput = z.infer<typeof readStateInputSchema>;
export type BulkReadStateInput = z.infer<typeof bulkReadStateInputSchema>;
export type BulkDeleteInput = z.infer<typeof bulkDeleteInputSchema>;

// ---- outputs: the wire shapes (docs/contract.md, Wire format); every …Ts is Unix ms or null ----

const ts = z.number().int();

export const messageSummarySchema = z.object({
  messageId: z.string(),
  /** Equals messageId: each stored copy of a mail is its own receipt (see docs/api.md). */
  receiptId: z.string(),
  threadId: z.string(),
  mailboxId: z.string(),
  direction: directionSchema,
  subject: z.string(),
  fromAddress: z.string(),
  fromDisplayName: z.string(),
  /** The first To address; null when the mail had none (e.g. Bcc only). */
  toAddress: z.string().nullable(),
  mailboxAddress: z.string(),
  attachmentCount: z.number().int(),
  isRead: z.boolean(),
  readAtTs: ts.nullable(),
  createdAtTs: ts,
  receivedAtTs: ts.nullable(),
  sentAtTs: ts.nullable(),
  /** `internal`: written by an authenticated mailbox here; `external`: arrived on port 25. */
  origin: z.enum(['internal', 'external']),
  /** True for internal mail and for external mail whose DMARC passed. */
  authenticated: z.boolean(),
  /** Outbound held by the approval gate: pending, approved, rejected or expired; null when never held. */
  approvalStatus: z.enum(['pending', 'approved', 'rejected', 'expired']).nullable(),
  /** Inbound screening: score 0..1, the signals found, whether held; null for outbound and older mail (docs/screening.md). */
  screening: screeningViewSchema.nullable(),
  /** The first words of the text body (no quoted lines, no signature), at most 140 characters; '' without one. */
  snippet: z.string(),
  /** A scheduled send's due time (outbound only); null when it was sent at once, and for inbound mail. */
  sendAtTs: ts.nullable(),
});
export type MessageSummary = z.infer<typeof messageSummarySchema>;

export const attachmentViewSchema = z.object({
  attachmentId: z.string(),
  filename: z.string(),
  contentType: z.string(),
  sizeBytes: z.number().int(),
  /** Content-ID without angle brackets: `cid:<contentId>` in bodyHtml names this attachment. */
  contentId: z.string().nullable(),
  disposition: z.enum(['inline', 'attachment']),
});
export type AttachmentView = z.infer<typeof attachmentViewSchema>;

/**
 * `held`: awaiting approval, not queued for the worker (docs/api.md, "Approval gate");
 * `scheduled`: waiting for its sendAt; `cancelled`: a scheduled send that never left (docs/workflow.md).
 */
export const DELIVERY_STATUSES = [
  'held',
  'queued',
  'delivered',
  'deferred',
  'failed',
  'scheduled',
  'cancelled',
] as const;

/** Where an outbound message stands before delivery (docs/workflow.md, "Scheduled sends"). */
export const SEND_STATUSES = ['scheduled', 'queued', 'cancelled', 'pending_approval'] as const;

export const deliveryViewSchema = z.object({
  address: z.string(),
  kind: z.enum(['to', 'cc', 'bcc']),
  status: z.string(),
  remoteReply: z.string().nullable(),
  attempts: z.number().int(),
  updatedAtTs: ts,
  deliveredAtTs: ts.nullable(),
});
export type DeliveryView = z.infer<typeof deliveryViewSchema>;

/** What extraction found at ingest (docs/api.md, "Extraction"). */
export const extractedSchema = z.object({
  /** One-time codes, as typed into a form (separators removed), first seen first. */
  codes: z.array(z.string()),
  links: z.array(z.object({ url: z.string(), kind: z.enum(['verification', 'unsubscribe', 'other']) })),
  /** The text body without quoted history and signature. */
  replyText: z.string(),
});

export const messageDetailSchema = messageSummarySchema.extend({
  toAddresses: z.array(z.string()),
  ccAddresses: z.array(z.string()),
  /** Outbound only (the owner sent them); always empty for inbound mail. */
  bccAddresses: z.array(z.string()),
  bodyText: z.string().nullable(),
  bodyHtml: z.string().nullable(),
  bodyFormat: z.enum(['text', 'html', 'text+html']),
  rawContentPath: z.string().nullable(),
  inReplyToMessageId: z.string().nullable(),
  attachments: z.array(attachmentViewSchema),
  /** Outbound only; null for inbound. */
  deliveryStatus: z.enum(DELIVERY_STATUSES).nullable(),
  /**
   * Outbound only (null for inbound): `scheduled` until it leaves, then `queued` (deliveryStatus
   * tells the rest); `cancelled` never leaves; `pending_approval` while held for approval.
   */
  status: z.enum(SEND_STATUSES).nullable(),
  /** Outbound only, one per recipient (To, Cc, Bcc); empty for inbound. */
  deliveries: z.array(deliveryViewSchema),
  /** RFC 8601 result words of the checks made on arrival (port 25); null for internal mail. */
  authentication: z
    .object({
      spf: z.string(),
      /** `pass` when any DKIM signature passed, else the first signature's result, `none` without one. */
      dkim: z.string(),
      dmarc: z.string(),
    })
    .nullable(),
  /** Inbound mail only; null for outbound mail and mail stored before extraction existed. */
  extracted: extractedSchema.nullable(),
});
export type MessageDetail = z.infer<typeof messageDetailSchema>;

export const messagePageSchema = z.object({
  items: z.array(messageSummarySchema),
  nextCursor: z.string().nullable(),
  totalCount: z.number().int(),
});

export const threadViewSchema = z.object({
  threadId: z.string(),
  mailboxId: z.string(),
  subject: z.string(),
  createdAtTs: ts,
  /** Workflow state (docs/workflow.md, "Thread state"). */
  state: threadStateSchema,
  awaitingReplySinceTs: ts.nullable(),
  followUpAtTs: ts.nullable(),
  /** Oldest first, soft-deleted messages left out. */
  messages: z.array(messageDetailSchema),
});
export type ThreadView = z.infer<typeof threadViewSchema>;

export const readStateResultSchema = z.object({ messageId: z.string(), isRead: z.boolean(), readAtTs: ts.nullable() });
export type ReadStateResult = z.infer<typeof readStateResultSchema>;

export const deleteResultSchema = z.object({ messageId: z.string(), deletedAtTs: ts, alreadyDeleted: z.boolean() });
export type DeleteResult = z.infer<typeof deleteResultSchema>;

export const bulkFailureSchema = z.object({ messageId: z.string(), code: z.number().int(), errMsg: z.string() });
export type BulkFailure = z.infer<typeof bulkFailureSchema>;

const bulkResultOf = <T extends z.ZodType>(item: T) =>
  z.object({
    requestedCount: z.number().int(),
    succeededItems: z.array(item),
    failedItems: z.array(bulkFailureSchema),
  });
export const bulkReadStateResultSchema = bulkResultOf(readStateResultSchema);
export const bulkDeleteResultSchema = bulkResultOf(deleteResultSchema);

export interface BulkResult<T> {
  requestedCount: number;
  succeededItems: T[];
  failedItems: BulkFailure[];
}
