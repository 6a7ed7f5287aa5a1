import { z } from 'zod';
import { addressSchema } from '../../base/address.js';
import { limitSchema } from '../../base/paging/cursor.js';
import {
  addressListSchema,
  attachmentIdListSchema,
  bodySchema,
  outgoingFields,
  scheduleFields,
  subjectSchema,
} from '../mail/send-fields.js';

// A draft holds what a send takes, field for field (state/mail/send-fields.ts, the pieces the
// send, reply and forward inputs are made of), but any of it may still be missing: whether it is
// complete is decided when it is sent, by the send's own schema (docs/workflow.md, "Drafts").

const mailboxAddress = outgoingFields.mailboxAddress;
/** Unknown or over-long ids are simply not found (404), as for messages. */
const id = z.string().trim().min(1).max(200);
const ts = z.number().int();

/** One address or a list, as on a send; unlike a send, an empty list is a draft without recipients yet. */
const draftToSchema = z.union([addressSchema.transform((a) => [a]), addressListSchema]);

/**
 * The content of a draft. In a change (PATCH) an absent field is kept; null clears a single
 * value (subject, bodies, parent, sendAt); a list given replaces the list (`[]` empties it).
 */
const contentFields = {
  toAddress: draftToSchema.optional(),
  ccAddresses: addressListSchema.optional(),
  bccAddresses: addressListSchema.optional(),
  subject: subjectSchema.nullable().optional(),
  bodyText: bodySchema.nullable().optional(),
  bodyHtml: bodySchema.nullable().optional(),
  /** Uploads (POST /api/messages/attachments) the draft holds until it is sent or deleted. */
  attachmentIds: attachmentIdListSchema.optional(),
  /** Makes it a reply to this message of the same mailbox (sent like POST /api/messages/{id}/reply). */
  parentMessageId: id.nullable().optional(),
  replyAll: z.boolean().optional(),
  sendAt: scheduleFields.sendAt.nullable(),
  cancelOnReply: scheduleFields.cancelOnReply,
};

/** POST /api/drafts, MCP create_draft: a domain token names the mailbox. */
export const createDraftInputSchema = z.object({ mailboxAddress, ...contentFields }).strict();
export type CreateDraftInput = z.infer<typeof createDraftInputSchema>;

/** PATCH /api/drafts/{draftId}: a partial change; mailboxAddress may name the draft's mailbox. */
export const updateDraftBodySchema = z.object({ mailboxAddress, ...contentFields }).strict();
export type UpdateDraftInput = z.infer<typeof updateDraftBodySchema>;
export type DraftContent = Omit<UpdateDraftInput, 'mailboxAddress'>;

export const draftIdParamsSchema = z.object({ draftId: id });
export const draftMailboxQuerySchema = z.object({ mailboxAddress });
export const draftRefInputSchema = draftIdParamsSchema.extend(draftMailboxQuerySchema.shape);
export type DraftRefInput = z.infer<typeof draftRefInputSchema>;

/** GET /api/drafts: paged like GET /api/messages. */
export const listDraftsInputSchema = z.object({
  mailboxAddress,
  limit: limitSchema,
  cursor: z.string().min(1).max(500).optional(),
});
export type ListDraftsInput = z.infer<typeof listDraftsInputSchema>;

export const draftAttachmentSchema = z.object({
  attachmentId: z.string(),
  filename: z.string(),
  contentType: z.string(),
  sizeBytes: z.number().int(),
});

/** A draft in lists and events: everything but the bodies, with the text body's first words. */
export const draftSummarySchema = z.object({
  draftId: z.string(),
  mailboxId: z.string(),
  mailboxAddress: z.string(),
  toAddress: z.array(z.string()),
  ccAddresses: z.array(z.string()),
  bccAddresses: z.array(z.string()),
  /** null: not set (a reply draft then takes the parent's subject with "Re: "). */
  subject: z.string().nullable(),
  /** The first words of bodyText, at most 140 characters; '' without one. */
  snippet: z.string(),
  /** The uploads it holds, in upload order (the order a sent message lists them). */
  attachmentIds: z.array(z.string()),
  attachments: z.array(draftAttachmentSchema),
  parentMessageId: z.string().nullable(),
  replyAll: z.boolean(),
  sendAtTs: ts.nullable(),
  cancelOnReply: z.boolean(),
  /** The token that created it (an agent's, say, for the person who reviews and sends it). */
  createdByTokenId: z.string().nullable(),
  createdAtTs: ts,
  updatedAtTs: ts,
});
export type DraftSummary = z.infer<typeof draftSummarySchema>;

/** GET /api/drafts/{draftId}: the summary with the bodies. */
export const draftSchema = draftSummarySchema.extend({
  bodyText: z.string().nullable(),
  bodyHtml: z.string().nullable(),
});
export type Draft = z.infer<typeof draftSchema>;

export const draftPageSchema = z.object({
  items: z.array(draftSummarySchema),
  nextCursor: z.string().nullable(),
  totalCount: z.number().int(),
});

/** DELETE /api/drafts/{draftId}: a hard delete, as for tokens and webhooks (a second one is 404). */
export const draftDeletedSchema = z.object({ draftId: z.string(), deleted: z.literal(true) });
export type DraftDeleted = z.infer<typeof draftDeletedSchema>;
