import { PassThrough, Writable } from 'node:stream';
import type { ParameterizedContext } from 'koa';
import { koaBody, HttpMethodEnum } from 'koa-body';
import { AppError } from '../../core/base/errors.js';
import { tooLarge } from '../../core/base/error-mapping.js';
import type { AttachmentService, StagedUpload } from '../../core/state/attachments/attachment.service.js';
import { assertIdentityCoding } from './body-coding.js';

/** Room for boundaries, part headers and the mailboxAddress field around the file itself. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
// formidable error codes (formidable/src/FormidableError.js) that mean "too large", not "malformed".
const TOO_LARGE_CODES = new Set([1006, 1009, 1016]);

/**
 * The fewest file bytes a form of this declared Content-Length can carry: what is left after the
 * most its other parts may take (fields up to FORM_OVERHEAD_BYTES, part headers, boundaries).
 */
export function declaredFileBytes(ctx: ParameterizedContext): number {
  const declared = Number(ctx.get('content-length'));
  return Number.isFinite(declared) ? Math.max(0, declared - 2 * FORM_OVERHEAD_BYTES) : 0;
}

export interface UploadForm {
  mailboxAddress: string | undefined;
  staged: StagedUpload;
}

/**
 * Reads POST /api/messages/attachments: multipart/form-data with an optional `mailboxAddress`
 * field and exactly one `file`. The file is streamed straight into the blob store through
 * formidable's fileWriteStreamHandler (never buffered whole here); anything else in its
 * place (no file, two files, another field name, not multipart) is ATTACHMENT_FORM_INVALID.
 */
export async function readUploadForm(ctx: ParameterizedContext, attachments: AttachmentService): Promise<UploadForm> {
  if (!ctx.request.is('multipart/form-data')) throw new AppError('ATTACHMENT_FORM_INVALID');
  assertIdentityCoding(ctx);
  const declared = Number(ctx.get('content-length'));
  if (Number.isFinite(declared) && declared > attachments.maxBytes + FORM_OVERHEAD_BYTES)
    throw tooLarge(attachments.maxBytes, 'file');

  const fileFields: string[] = [];
  const stagings: Promise<StagedUpload>[] = [];
  const contents: PassThrough[] = [];
  const parse = koaBody({
    multipart: true,
    json: false,
    urlencoded: false,
    text: false,
    parsedMethods: [HttpMethodEnum.POST],
    formidable: {
      maxFields: 20,
      maxFieldsSize: FORM_OVERHEAD_BYTES,
      allowEmptyFiles: true,
      minFileSize: 0,
      maxFileSize: attachments.maxBytes,
      maxTotalFileSize: attachments.maxBytes * 2,
      onFileBegin: (name) => {
        fileFields.push(name);
      },
      fileWriteStreamHandler: (file) => {
        // Only the first part named `file` is kept; others are drained and the form refused below.
        if (fileFields.length !== 1 || fileFields[0] !== 'file')
          return new Writable({ write: (_chunk, _enc, done) => done() });
        const meta = file as unknown as { originalFilename: string | null; mimetype: string | null };
        const content = new PassThrough();
        contents.push(content);
        const staging = attachments.stage({ filename: meta.originalFilename, contentType: meta.mimetype, content });
        staging.catch(() => undefined); // settled below; this only keeps it from counting as unhandled
        stagings.push(staging);
        return content;
      },
    },
  });

  let parseError: unknown;
  try {
    await parse(ctx, async () => undefined);
  } catch (err) {
    parseError = err;
  }
  // formidable does not always destroy the stream of a part cut short (a truncated form), which
  // would leave the blob store waiting for bytes that never come.
  for (const content of contents)
    if (!content.writableFinished) content.destroy(new AppError('ATTACHMENT_FORM_INVALID'));
  const settled = await Promise.allSettled(stagings);
  const staged = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  try {
    // The store's own size verdict first; a stream it lost because the form broke is only a symptom.
    const stageError = settled.find((s) => s.status === 'rejected')?.reason as unknown;
    if (stageError instanceof AppError && stageError.code === 'PAYLOAD_TOO_LARGE') throw stageError;
    if (parseError) throw formError(parseError);
    if (stageError) throw stageError;
    if (fileFields.length !== 1 || fileFields[0] !== 'file' || !staged[0]) {
      throw new AppError(
        'ATTACHMENT_FORM_INVALID',
        `Expected exactly one file in the field "file"; got ${fileFields.length ? fileFields.map((f) => `"${f}"`).join(', ') : 'none'}.`,
      );
    }
    const fields = (ctx.request.body ?? {}) as Record<string, string | string[]>;
    const mailboxAddress = fields.mailboxAddress;
    if (Array.isArray(mailboxAddress))
      throw new AppError('ATTACHMENT_FORM_INVALID', 'mailboxAddress is given more than once.');
    return { mailboxAddress, staged: staged[0] };
  } catch (err) {
    await Promise.all(staged.map((s) => attachments.discard(s)));
    throw err;
  }
}

function formError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'number' && TOO_LARGE_CODES.has(code)) return new AppError('PAYLOAD_TOO_LARGE');
  return new AppError('ATTACHMENT_FORM_INVALID', undefined, { cause: err });
}
