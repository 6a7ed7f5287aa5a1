import { z } from 'zod';

/** `data` of POST /api/messages/attachments (201). */
export const attachmentUploadedSchema = z.object({
  attachmentUploadId: z.string(),
  filename: z.string(),
  contentType: z.string(),
  sizeBytes: z.number().int(),
});
export type AttachmentUploaded = z.infer<typeof attachmentUploadedSchema>;
