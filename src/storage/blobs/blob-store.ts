import type { Readable } from 'node:stream';

/**
 * Raw messages and attachments. Keys are chosen by the core (`att/<id>`, `raw/<id>`); a blob is
 * written completely before the row that names it commits, so a committed row never points at a
 * missing or partial blob.
 */
export interface BlobStore {
  /** Streams `source` into the store; returns its size. Throws PAYLOAD_TOO_LARGE past `maxBytes`. */
  put(key: string, source: Readable | Buffer, maxBytes?: number): Promise<{ sizeBytes: number; sha256: string }>;
  get(key: string): Promise<Buffer>;
  stream(key: string): Promise<Readable>;
  delete(key: string): Promise<void>;
}
