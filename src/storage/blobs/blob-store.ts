import type { Readable } from 'node:stream';
import type { Sql } from '../database.js';

/**
 * Raw messages and attachments. Keys are chosen by the core (`att/<id>`, `raw/<id>`); a blob is
 * written completely before the row that names it commits, so a committed row never points at a
 * missing or partial blob.
 */
export interface BlobStore {
  /** Streams `source` into the store; returns its size. Throws BlobTooLargeError (storage/errors.ts) past `maxBytes`. */
  put(key: string, source: Readable | Buffer, maxBytes?: number): Promise<{ sizeBytes: number; sha256: string }>;
  /**
   * Moves the complete blob `from` to the new key `to` with `head` in front of its bytes, without
   * reading them through the process (PostgreSQL renames chunk rows; files copy in the kernel's
   * buffers). `to` is complete or absent; `from` is gone afterwards.
   */
  prependAndMove(from: string, to: string, head: Buffer): Promise<{ sizeBytes: number }>;
  /**
   * Stores a blob already in memory as part of the caller's transaction `trx`: PostgreSQL writes
   * its rows there, so they commit (one WAL flush) or vanish with the row that names them; files
   * are written and fsynced before this returns, as `put` does (a rollback leaves a file the
   * caller deletes, or the storage sweeper once old). For small blobs: the bytes sit in memory.
   */
  putIn(trx: Sql, key: string, data: Buffer): Promise<{ sizeBytes: number }>;
  get(key: string): Promise<Buffer>;
  stream(key: string): Promise<Readable>;
  delete(key: string): Promise<void>;
  /**
   * Every blob last written before `before`, in batches, for the storage sweeper; with the
   * debris of writes that never finished (a temp file a killed process left), which no row can
   * name. Deleting listed keys while iterating is allowed.
   */
  list(before: Date): AsyncIterable<BlobEntry[]>;
}

/** One stored blob as a listing sees it. */
export interface BlobEntry {
  /** A key `delete` accepts. */
  key: string;
  /** PostgreSQL: insert time; files: modification time. */
  writtenAt: Date;
  /** False for an unfinished write (never referenced by a row; safe to delete once old). */
  complete: boolean;
}

/** Keys per batch of a listing: one reference query of the sweeper each. */
export const BLOB_LIST_BATCH = 500;

/**
 * Largest blob a writer holds in memory to store with `putIn` inside its transaction (one chunk of
 * the PostgreSQL store); larger ones are streamed with `put` before it.
 */
export const SMALL_BLOB_BYTES = 512 * 1024;
