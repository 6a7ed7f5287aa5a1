import { z } from 'zod';
import { attachmentUploadedSchema } from '../../../core/state/attachments/attachment.schemas.js';
import { defineTool } from '../tool.js';
import { MAILBOX_ADDRESS_ACTING } from './fields.js';

const uploadInputSchema = z
  .object({
    mailboxAddress: z.string().trim().max(320).optional().describe(MAILBOX_ADDRESS_ACTING),
    // The length is not capped here: the core refuses more than MAX_ATTACHMENT_BYTES decoded with
    // 413, exactly as the HTTP upload does (and the transport bounds the request body).
    contentBase64: z
      .base64()
      .describe("The file's bytes, base64-encoded (standard alphabet, with padding). Empty is allowed."),
    filename: z
      .string()
      .max(1000)
      .describe(
        'File name shown to recipients, e.g. "report.pdf" (path parts are dropped, at most 255 characters kept).',
      ),
    contentType: z
      .string()
      .max(255)
      .optional()
      .describe('MIME type such as "application/pdf". Default application/octet-stream.'),
  })
  .strict();

/** POST /api/messages/attachments, with the bytes as base64 (MCP arguments are JSON). */
export const uploadAttachmentTool = (maxBytes: number) =>
  defineTool({
    name: 'upload_attachment',
    title: 'Upload an attachment',
    description:
      `Upload one file to attach to a later send_mail or reply_message: pass the returned attachmentUploadId in attachmentIds. ` +
      `At most ${maxBytes} bytes after decoding (larger: error 413). The upload belongs to the mailbox it was made for and can be ` +
      `attached once, only by that mailbox. Needs the AttachmentWrite scope. Errors come back as isError with text ` +
      `{"code", "errorCode", "errMsg"}: 400 invalid argument, 403 missing scope, 404 unknown mailbox, 413 too large.`,
    input: uploadInputSchema,
    output: attachmentUploadedSchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: (input, { principal, services }) =>
      services.attachments.upload(principal, input.mailboxAddress, {
        filename: input.filename,
        contentType: input.contentType,
        content: Buffer.from(input.contentBase64, 'base64'),
      }),
  });
