import { z } from 'zod';
import { addressSchema } from '../../base/address.js';
import { MAX_BODY_CHARS, MAX_SUBJECT_CHARS } from './body-caps.js';

// The fields of an outgoing message, each with its rule, written once: send, reply and forward
// (flows/sending/send.schemas.ts) and drafts (state/drafts/draft.schemas.ts) compose their inputs
// from these, so a draft holds exactly what a send would accept.

export const MAX_ATTACHMENTS = 100;

// A subject is one header line: CR/LF would be header injection, so they fold to a space.
export const subjectSchema = z
  .string()
  .transform((s) => s.replace(/[\r\n]+/g, ' ').trim())
  .pipe(z.string().max(MAX_SUBJECT_CHARS));
export const bodySchema = z.string().max(MAX_BODY_CHARS);
export const addressListSchema = z.array(addressSchema).max(1000).transform(dedupe);
export const attachmentIdListSchema = z.array(z.string().min(1).max(40)).max(MAX_ATTACHMENTS).transform(dedupe);

function dedupe<T>(items: T[]): T[] {
  return [...new Set(items)];
}

/** The fields every outgoing message takes (send, reply, forward, draft). */
export const outgoingFields = {
  mailboxAddress: z.string().max(320).optional(),
  ccAddresses: addressListSchema.default([]),
  bccAddresses: addressListSchema.default([]),
  attachmentIds: attachmentIdListSchema.default([]),
  bodyText: bodySchema.optional(),
  /** Our addition to the spec's fields: an HTML alternative (bodyFormat text+html). */
  bodyHtml: bodySchema.optional(),
};

/** Scheduled sends (docs/workflow.md, "Scheduled sends"): send, reply and drafts. */
export const scheduleFields = {
  /** When it may leave, ms since the epoch; at or before now it is sent at once. */
  sendAt: z.number().int().positive().max(8_640_000_000_000_000).optional(),
  /** Cancel it if an inbound message arrives in its thread before sendAt. */
  cancelOnReply: z.boolean().optional(),
};

/** toAddress is one address or a list (docs/contract.md, Wire format); it is always a list inside. */
export const toSchema = z.union([
  addressSchema.transform((a) => [a]),
  z.array(addressSchema).min(1).max(1000).transform(dedupe),
]);

/** Replies (docs/workflow.md, "Replies"): also Cc everyone the parent was addressed to, except this mailbox. */
export const replyAllSchema = z.boolean().default(false);
