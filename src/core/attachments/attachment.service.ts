import type { Readable } from 'node:stream';
import type { BlobStore } from '../../storage/blobs/blob-store.js';
import type { Database } from '../../storage/database.js';
import { BlobTooLargeError } from '../../storage/errors.js';
import { toAppError } from '../error-mapping.js';
import { ID_PREFIX, newId } from '../ids.js';
import type { Clock } from '../time.js';
import type { Principal } from '../auth/principal.js';
import { requireScope, resolveMailbox } from '../auth/access.js';
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
    private readonly options: { maxBytes: number },
  ) {}

  get maxBytes(): number {
    return this.options.maxBytes;
  }

  /** 403 before a single byte of the body is read. */
  authorize(principal: Principal): void {
    requireScope(principal, 'AttachmentWrite');
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
      await this.db.tx((trx) =>
        insertAttachment(trx, { ...staged, mailboxId: mailbox.id, messageId: null, at: this.clock.now() }),
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
    await resolveMailbox(this.db, principal, mailboxAddress);
    return this.commit(principal, mailboxAddress, await this.stage(file));
  }
}
