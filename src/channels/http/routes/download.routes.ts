import { z } from 'zod';
import { route, RawResponse, type RouteSpec } from '../route.js';
import { mailboxAddressQuerySchema, messageIdParamsSchema } from '../../../core/state/messages/message.schemas.js';
import { attachmentLocation } from '../../../core/state/attachments/attachment-download.js';
import {
  attachmentParamsSchema,
  attachmentTextSchema,
} from '../../../core/state/attachments/text/attachment-text.schemas.js';

const both = ['mailbox', 'domain'] as const;
const bytes = z.string().describe('the bytes (not the envelope)');

/**
 * RFC 6266 Content-Disposition: always `attachment` (a download never renders in the API's
 * origin), an ASCII `filename` fallback with quotes, backslashes and controls replaced, and the
 * exact name as RFC 8187 `filename*` (UTF-8, percent-encoded).
 */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\%]/g, '_') || 'download';
  const exact = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${exact}`;
}

/** Downloads (rawContentPath and attachments): the stored bytes with their media type. */
export const downloadRoutes: RouteSpec[] = [
  route({
    method: 'GET',
    path: '/api/messages/:messageId/raw',
    summary:
      'The RFC 5322 source of a message (message/rfc822): as received, or as it left (DKIM-signed) for outbound mail.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    params: messageIdParamsSchema,
    query: mailboxAddressQuerySchema,
    response: bytes,
    status: 200,
    handler: async ({ principal, params, query, services }) => {
      const where = await services.messages.rawContentLocation(principal, { ...params, ...query });
      return new RawResponse(
        await services.blobs.stream(where.blobKey),
        'message/rfc822',
        contentDisposition(`${where.messageId}.eml`),
      );
    },
  }),
  route({
    method: 'GET',
    path: '/api/messages/:messageId/attachments/:attachmentId',
    summary: 'One attachment of a message, as stored.',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    params: messageIdParamsSchema.extend({ attachmentId: z.string().trim().min(1).max(200) }),
    query: mailboxAddressQuerySchema,
    response: bytes,
    status: 200,
    handler: async ({ principal, params, query, services }) => {
      const a = await attachmentLocation(services.db, principal, { ...params, ...query });
      return new RawResponse(
        await services.blobs.stream(a.blobKey),
        a.contentType,
        contentDisposition(a.filename),
        a.sizeBytes,
      );
    },
  }),
  route({
    method: 'GET',
    path: '/api/messages/:messageId/attachments/:attachmentId/text',
    summary:
      'The text of a PDF, DOCX, HTML or text attachment (extracted once, capped; 415 other types, 413 too large, ' +
      '422 extraction failed or timed out).',
    auth: 'bearer',
    scope: 'MailboxRead',
    tokenKinds: both,
    params: attachmentParamsSchema,
    query: mailboxAddressQuerySchema,
    response: attachmentTextSchema,
    status: 200,
    handler: ({ principal, params, query, services }) =>
      services.attachmentText.text(principal, { ...params, ...query }),
  }),
];
