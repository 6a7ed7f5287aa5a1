import type { Readable } from 'node:stream';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';
import type { Database, Sql } from '../../../storage/database.js';
import { BlobTooLargeError } from '../../../storage/errors.js';
import { toAppError } from '../../base/error-mapping.js';
import { AppError } from '../../base/errors.js';
import { FairGate } from '../../../storage/fair-gate.js';
import { storageUsage } from '../quota/storage-quota.store.js';
import { lockMailboxRows } from '../mailboxes/mailbox.store.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import type { Clock } from '../../base/time.js';
import type { Principal } from '../../access/principal.js';
import { requireScope, resolveMailbox } from '../../access/access.js';
import { sanitizeContentType, sanitizeFilename } from './attachment-meta.js';
import { insertAttachment } from './attachment.store.js';
import type { AttachmentUploaded } from './attachment.schemas.js';

/** Bytes already in the blob store, not yet owned by any mailbox. */
export interface StagedUpload {
  id: string;
  blobKey: string;
  filename: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
}

export interface UploadFile {
  filename: string | null | undefined;
  contentType: string | null | undefined;
  content: Readable | Buffer;
}

/**
 * Outbound attachment uploads (scope AttachmentWrite). An upload belongs to one mailbox and
 * stays unclaimed (message_id null) until a send of that same mailbox names it.
 *
 * Two-step API because a multipart form may carry the file before mailboxAddress: `stage`
 * streams the bytes while the form is still arriving, `commit` then binds them to the resolved
 * mailbox. Channels that know the mailbox first (MCP) call `upload`.
 */
export class AttachmentService {
  constructor(
    private readonly db: Database,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly options: {
      maxBytes: number;
      maxPending: number;
      maxPendingBytes: number;
      concurrentUploads: number;
    },
  ) {
    this.uploadSlots = new FairGate(options.concurrentUploads);
  }

  /** Upload bodies read at once in this process (UPLOAD_CONCURRENCY); the rest wait, unread. */
  private readonly uploadSlots: FairGate;
  /** Admissions in flight per mailbox in this process (see `commit`). */
  private readonly admitting = new Map<string, Promise<unknown>>();

  /**
   * Runs one upload (reading its body, staging and committing it) in one of UPLOAD_CONCURRENCY
   * slots. A waiting upload's body is not read, so TCP holds its client back; a flood of parallel
   * uploads then costs this process a few streams at a time instead of every database connection
   * and the event loop (docs/api.md, "Storage quota"), while other requests go ahead.
   */
  withUploadSlot<T>(task: () => Promise<T>): Promise<T> {
    return this.uploadSlots.run(task);
  }

  get maxBytes(): number {
    return this.options.maxBytes;
  }

  /** 403 before a single byte of the body is read. */
  authorize(principal: Principal): void {
    requireScope(principal, 'AttachmentWrite');
  }

  /**
   * Before a byte of an upload whose mailbox may come with the body (HTTP form): the scope, and,
   * when the token names its mailbox, the bounds for an upload of at least `atLeastBytes`.
   */
  async beforeUpload(principal: Principal, atLeastBytes: number): Promise<void> {
    this.authorize(principal);
    if (principal.mailboxId !== null) await this.precheck(principal.mailboxId, atLeastBytes);
  }

  /** Streams one file into the blob store; PAYLOAD_TOO_LARGE past maxBytes (nothing is kept). */
  async stage(file: UploadFile): Promise<StagedUpload> {
    const id = newId(ID_PREFIX.attachment, this.clock.now().getTime());
    const blobKey = `att/${id}`;
    const { sizeBytes, sha256 } = await this.blobs.put(blobKey, file.content, this.options.maxBytes).catch((err) => {
      throw err instanceof BlobTooLargeError ? toAppError(err) : err;
    });
    return {
      id,
      blobKey,
      filename: sanitizeFilename(file.filename),
      contentType: sanitizeContentType(file.contentType),
      sizeBytes,
      sha256,
    };
  }

  /** Binds staged bytes to the caller's mailbox; on any refusal the bytes are deleted. */
  async commit(
    principal: Principal,
    mailboxAddress: string | undefined,
    staged: StagedUpload,
  ): Promise<AttachmentUploaded> {
    try {
      this.authorize(principal);
      const mailbox = await resolveMailbox(this.db, principal, mailboxAddress);
      // One admission per mailbox at a time in this process: the others wait here, not on the
      // mailbox row lock holding a pooled connection each (which starved every other tenant).
      await this.oneAtATime(mailbox.id, () =>
        this.db.tx(async (trx) => {
          await this.admit(trx, mailbox.id, staged.sizeBytes);
          await insertAttachment(trx, { ...staged, mailboxId: mailbox.id, messageId: null, at: this.clock.now() });
        }),
      );
    } catch (err) {
      await this.discard(staged);
      throw err;
    }
    return {
      attachmentUploadId: staged.id,
      filename: staged.filename,
      contentType: staged.contentType,
      sizeBytes: staged.sizeBytes,
    };
  }

  /**
   * The bounds on what a mailbox may park in uploads (docs/api.md, "Storage quota"): at most
   * maxPending unclaimed uploads and maxPendingBytes of them (UPLOADS_PENDING_LIMIT, 429), and
   * its stored messages plus unclaimed uploads within its storage quota (QUOTA_EXCEEDED, 413).
   * Under the mailbox row lock, so parallel uploads of one mailbox are counted one at a time.
   */
  private async admit(trx: Sql, mailboxId: string, sizeBytes: number): Promise<void> {
    await lockMailboxRows(trx, [mailboxId]); // uploads of one mailbox are admitted one at a time
    const usage = await storageUsage(trx, mailboxId);
    if (!usage) throw new AppError('NOT_FOUND');
    if (
      usage.pendingUploads + 1 > this.options.maxPending ||
      usage.pendingUploadBytes + sizeBytes > this.options.maxPendingBytes
    )
      throw new AppError('UPLOADS_PENDING_LIMIT');
    if (usage.quotaBytes !== null && usage.usedBytes + usage.pendingUploadBytes + sizeBytes > usage.quotaBytes)
      throw new AppError('QUOTA_EXCEEDED');
  }

  /**
   * The same bounds before a byte is read, when the mailbox is known up front (a mailbox token on
   * HTTP, MCP): a mailbox already at a cap, or an upload of at least `atLeastBytes` (what the
   * request declares, less what its form may wrap around the file) that cannot fit, is refused at
   * once instead of after streaming the upload. `admit` stays the authority (this one takes no lock).
   */
  async precheck(mailboxId: string, atLeastBytes = 0): Promise<void> {
    const usage = await storageUsage(this.db.db, mailboxId);
    if (!usage) return;
    const pendingBytes = usage.pendingUploadBytes + atLeastBytes;
    if (
      usage.pendingUploads >= this.options.maxPending ||
      usage.pendingUploadBytes >= this.options.maxPendingBytes ||
      pendingBytes > this.options.maxPendingBytes
    )
      throw new AppError('UPLOADS_PENDING_LIMIT');
    const stored = usage.usedBytes + usage.pendingUploadBytes;
    if (usage.quotaBytes !== null && (stored >= usage.quotaBytes || stored + atLeastBytes > usage.quotaBytes))
      throw new AppError('QUOTA_EXCEEDED');
  }

  private async oneAtATime<T>(key: string, task: () => Promise<T>): Promise<T> {
    const before = this.admitting.get(key) ?? Promise.resolve();
    const mine = before.then(task, task);
    const settled = mine.catch(() => undefined);
    this.admitting.set(key, settled);
    try {
      return await mine;
    } finally {
      if (this.admitting.get(key) === settled) this.admitting.delete(key);
    }
  }

  async discard(staged: StagedUpload): Promise<void> {
    await this.blobs.delete(staged.blobKey).catch(() => undefined);
  }

  /** One-shot upload for channels that know the mailbox before the bytes (MCP). */
  async upload(
    principal: Principal,
    mailboxAddress: string | undefined,
    file: UploadFile,
  ): Promise<AttachmentUploaded> {
    this.authorize(principal);
    const mailbox = await resolveMailbox(this.db, principal, mailboxAddress);
    await this.precheck(mailbox.id);
    return this.withUploadSlot(async () => this.commit(principal, mailboxAddress, await this.stage(file)));
  }
}
