import { setTimeout as sleep } from 'node:timers/promises';
import { ms, type Database } from '../../../../storage/database.js';
import type { BlobStore } from '../../../../storage/blobs/blob-store.js';
import { AppError } from '../../../base/errors.js';
import { storableText } from '../../../base/text.js';
import type { Principal } from '../../../access/principal.js';
import type { Clock } from '../../../base/time.js';
import type { Logger } from '../../../base/logger.js';
import { attachmentLocation, type AttachmentLocation } from '../attachment-download.js';
import {
  cachedText,
  claimText,
  failExpiredClaim,
  releaseClaim,
  settleText,
  type SettledText,
} from './attachment-text.store.js';
import type { AttachmentText, AttachmentTextInput } from './attachment-text.schemas.js';
import { TextRunner, type TextKind, type TextLimits, type TextOutcome } from './text-runner.js';
import { TenantGate } from './tenant-gate.js';

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

export interface AttachmentTextLimits extends TextLimits {
  /** Largest file text is extracted from (413 beyond). */
  maxBytes: number;
  /** Extractor processes running at once in this process; the rest wait their tenant's turn. */
  concurrency: number;
}

/** A claim's deadline is its extraction's time limit plus this, for reading the bytes and recording. */
const CLAIM_GRACE_MS = 10_000;
/** How often a read waits for a file another request or replica is extracting. */
const CLAIM_POLL_MS = 250;

/**
 * GET /api/messages/{messageId}/attachments/{attachmentId}/text and MCP get_attachment: the text
 * of a PDF, DOCX, HTML or text attachment, extracted lazily in a separate process under a time,
 * memory, inflation and output cap, and stored (docs/attachment-extraction.md). The claim is
 * committed before the extractor starts, so a process that dies mid-way poisons only that file.
 */
export class AttachmentTextService {
  private readonly runner: TextRunner;
  private readonly gate: TenantGate;
  /** One resolution per attachment in this process: concurrent readers of one file share it. */
  private readonly inflight = new Map<string, Promise<SettledText>>();

  constructor(
    private readonly db: Database,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly limits: AttachmentTextLimits,
  ) {
    this.runner = new TextRunner(limits);
    this.gate = new TenantGate(limits.concurrency);
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
    const row = await this.settled(a, kind, principal.domainId);
    if (row.status !== 'ok')
      throw new AppError(
        'ATTACHMENT_TEXT_FAILED',
        `Text extraction failed (${row.failure_reason ?? 'unreadable'}): ${row.error_detail ?? 'unknown reason'}.`,
      );
    return {
      attachmentId: a.attachmentId,
      messageId: input.messageId,
      filename: a.filename,
      contentType: a.contentType,
      kind,
      text: row.text ?? '',
      truncated: row.truncated,
      extractedAtTs: ms(row.created_at)!,
      ...a.trust,
    };
  }

  /** Extractions running and waiting their turn in this process (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    return this.gate.load;
  }

  /**
   * Shutdown, after the HTTP drain: kills the extractors still running and gives their claims
   * back (their files are not to blame), so the next replica extracts them instead of recording
   * them `interrupted`.
   */
  async close(): Promise<void> {
    this.runner.close();
    await Promise.allSettled(this.inflight.values());
  }

  private settled(a: AttachmentLocation, kind: TextKind, domainId: string): Promise<SettledText> {
    let pending = this.inflight.get(a.attachmentId);
    if (!pending) {
      pending = this.resolve(a, kind, domainId).finally(() => this.inflight.delete(a.attachmentId));
      this.inflight.set(a.attachmentId, pending);
    }
    return pending;
  }

  private async resolve(a: AttachmentLocation, kind: TextKind, domainId: string): Promise<SettledText> {
    for (;;) {
      const row = await cachedText(this.db, a.attachmentId);
      if (row && row.status !== 'extracting') return row as SettledText;
      if (row) {
        // Claimed elsewhere (another replica, or a process that has since died): wait for its
        // outcome; past the claim's deadline nobody will write one, and the file is recorded failed.
        const left = (ms(row.deadline_at) ?? 0) - this.clock.now().getTime();
        if (left <= 0) await failExpiredClaim(this.db, a.attachmentId, this.clock.now());
        else await sleep(Math.min(left + 10, CLAIM_POLL_MS));
        continue;
      }
      // Plain text is only decoded (linear, bounded by the size cap): no extractor, no turn.
      if (kind === 'text') await this.extract(a, kind);
      else await this.gate.run({ domainId, mailboxId: a.mailboxId }, () => this.extract(a, kind));
    }
  }

  /** Claims, extracts and records one file; a lost claim returns at once (the loop reads the winner's row). */
  private async extract(a: AttachmentLocation, kind: TextKind): Promise<void> {
    const now = this.clock.now();
    const deadline = new Date(now.getTime() + this.limits.timeoutMs + CLAIM_GRACE_MS);
    if (!(await claimText(this.db, a.attachmentId, now, deadline))) return;
    let outcome: TextOutcome;
    try {
      const bytes = await this.read(a.blobKey, a.sizeBytes);
      outcome = kind === 'text' ? this.decoded(bytes) : await this.runner.extract(kind, bytes);
    } catch (err) {
      // The bytes could not be read (storage): nothing is known about the file, so no verdict.
      await releaseClaim(this.db, a.attachmentId).catch(() => undefined);
      throw err;
    }
    if (!outcome.ok && outcome.reason === 'shutdown') {
      await releaseClaim(this.db, a.attachmentId);
      throw new AppError('UNAVAILABLE', 'The server is shutting down; read the attachment text again.');
    }
    if (!outcome.ok)
      this.log.warn('attachment_text.failed', {
        attachmentId: a.attachmentId,
        reason: outcome.reason,
        detail: outcome.detail,
        peakMb: outcome.peakMb,
      });
    await settleText(
      this.db,
      a.attachmentId,
      outcome.ok
        ? {
            status: 'ok',
            text: storableText(outcome.text),
            truncated: outcome.truncated,
            error_code: null,
            error_detail: null,
            failure_reason: null,
          }
        : {
            status: 'failed',
            text: null,
            truncated: false,
            error_code: 'ATTACHMENT_TEXT_FAILED',
            error_detail: outcome.detail,
            failure_reason: outcome.reason,
          },
      this.clock.now(),
    );
  }

  private decoded(bytes: Uint8Array): TextOutcome {
    const text = new TextDecoder().decode(bytes);
    const max = this.limits.maxChars;
    return { ok: true, text: text.slice(0, max), truncated: text.length > max };
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
