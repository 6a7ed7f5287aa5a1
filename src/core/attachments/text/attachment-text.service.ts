import { ms, type Database } from '../../../storage/database.js';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';
import { AppError } from '../../errors.js';
import { storableText } from '../../text.js';
import type { Principal } from '../../auth/principal.js';
import type { Clock } from '../../time.js';
import type { Logger } from '../../logger.js';
import { attachmentLocation } from '../attachment-download.js';
import { cachedText, storeText } from './attachment-text.store.js';
import type { AttachmentText, AttachmentTextInput } from './attachment-text.schemas.js';
import { TextRunner, type TextKind, type TextLimits } from './text-runner.js';

/** Which extractor reads a file: by media type, else by file name extension. */
export function textKindOf(contentType: string, filename: string): TextKind | null {
  const type = contentType.toLowerCase().split(';')[0]!.trim();
  const ext = filename.toLowerCase().split('.').pop() ?? '';
  if (type === 'application/pdf' || ext === 'pdf') return 'pdf';
  if (type === 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' || ext === 'docx')
    return 'docx';
  if (type === 'text/html' || type === 'application/xhtml+xml' || ext === 'html' || ext === 'htm') return 'html';
  if (type.startsWith('text/') || ['txt', 'csv', 'md', 'log', 'json', 'xml'].includes(ext)) return 'text';
  return null;
}

/**
 * GET /api/messages/{messageId}/attachments/{attachmentId}/text and MCP get_attachment: the text
 * of a PDF, DOCX, HTML or text attachment, extracted lazily off the event loop under a time, heap,
 * size and output cap, and cached (docs/api.md, "Attachment text").
 */
export class AttachmentTextService {
  private readonly runner: TextRunner;

  constructor(
    private readonly db: Database,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly limits: TextLimits & { maxBytes: number },
  ) {
    this.runner = new TextRunner(limits);
  }

  async text(principal: Principal, input: AttachmentTextInput): Promise<AttachmentText> {
    // Scope, visibility and soft delete exactly as for the download (one rule, attachmentLocation).
    const a = await attachmentLocation(this.db, principal, input);
    const kind = textKindOf(a.contentType, a.filename);
    if (!kind) throw new AppError('ATTACHMENT_TEXT_UNSUPPORTED', `${a.contentType} is not PDF, DOCX, HTML or text.`);
    if (a.sizeBytes > this.limits.maxBytes)
      throw new AppError(
        'ATTACHMENT_TEXT_TOO_LARGE',
        `Text is extracted from files up to ${this.limits.maxBytes} bytes.`,
      );
    const base = {
      attachmentId: a.attachmentId,
      messageId: input.messageId,
      filename: a.filename,
      contentType: a.contentType,
      kind,
    };
    let cached = await cachedText(this.db, a.attachmentId);
    if (!cached) {
      const outcome = await this.runner.extract(kind, await this.read(a.blobKey, a.sizeBytes));
      if (!outcome.ok)
        this.log.warn('attachment_text.failed', { attachmentId: a.attachmentId, reason: outcome.reason });
      await storeText(
        this.db,
        a.attachmentId,
        outcome.ok
          ? {
              status: 'ok',
              text: storableText(outcome.text),
              truncated: outcome.truncated,
              error_code: null,
              error_detail: null,
            }
          : {
              status: 'failed',
              text: null,
              truncated: false,
              error_code: 'ATTACHMENT_TEXT_FAILED',
              error_detail: outcome.reason,
            },
        this.clock.now(),
      );
      cached = (await cachedText(this.db, a.attachmentId))!;
    }
    if (cached.status !== 'ok')
      throw new AppError(
        'ATTACHMENT_TEXT_FAILED',
        `Text extraction failed: ${cached.error_detail ?? 'unknown reason'}.`,
      );
    return { ...base, text: cached.text ?? '', truncated: cached.truncated, extractedAtTs: ms(cached.created_at)! };
  }

  private async read(blobKey: string, sizeBytes: number): Promise<Uint8Array> {
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of await this.blobs.stream(blobKey)) {
      total += (chunk as Buffer).length;
      // The row's size is what was stored; a blob grown past the cap since is refused all the same.
      if (total > Math.max(sizeBytes, this.limits.maxBytes)) throw new AppError('ATTACHMENT_TEXT_TOO_LARGE');
      chunks.push(chunk as Buffer);
    }
    return new Uint8Array(Buffer.concat(chunks));
  }
}
