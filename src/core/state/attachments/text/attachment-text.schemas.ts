import { z } from 'zod';
import {
  messageIdParamsSchema,
  mailboxAddressQuerySchema,
  messageSummarySchema,
} from '../../messages/message.schemas.js';

export const attachmentParamsSchema = messageIdParamsSchema.extend({ attachmentId: z.string().trim().min(1).max(200) });
export const attachmentTextInputSchema = attachmentParamsSchema.extend(mailboxAddressQuerySchema.shape);
export type AttachmentTextInput = z.infer<typeof attachmentTextInputSchema>;

export const attachmentTextSchema = z.object({
  attachmentId: z.string(),
  messageId: z.string(),
  filename: z.string(),
  contentType: z.string(),
  /** How the text was read: pdf, docx, html or text. */
  kind: z.enum(['pdf', 'docx', 'html', 'text']),
  text: z.string(),
  /** True when the text was cut at the output cap. */
  truncated: z.boolean(),
  extractedAtTs: z.number().int(),
  /** Whose text this is: the carrying message's origin and authenticated, as in its detail (docs/contract.md). */
  origin: messageSummarySchema.shape.origin,
  authenticated: messageSummarySchema.shape.authenticated,
});
export type AttachmentText = z.infer<typeof attachmentTextSchema>;
