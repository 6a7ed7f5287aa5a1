import type { Database } from '../../storage/database.js';
import type { BlobStore } from '../../storage/blobs/blob-store.js';
import type { Clock } from '../time.js';

/** Outbound attachment uploads. (Being built.) */
export class AttachmentService {
  constructor(
    protected readonly db: Database,
    protected readonly blobs: BlobStore,
    protected readonly clock: Clock,
    protected readonly options: { maxBytes: number },
  ) {}
}
