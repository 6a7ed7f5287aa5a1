import type { Database } from '../../../storage/database.js';
import { deleteExpiredUploads, unreferencedKeys, type BlobReference } from './storage-sweeper.store.js';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';
import type { Logger } from '../../base/logger.js';
import type { Clock } from '../../base/time.js';

/**
 * Every column that names a blob. A blob no row names is an orphan; the storage-sweeper test
 * compares this list with the schema, so a new blob column cannot be forgotten here.
 */
export const BLOB_REFERENCES: readonly BlobReference[] = [
  { table: 'message', column: 'raw_blob_key' },
  { table: 'message', column: 'sent_raw_blob_key' },
  { table: 'attachment', column: 'blob_key' },
];

export interface StorageSweepOptions {
  /**
   * An unreferenced blob younger than this is left alone: it may belong to a write whose row
   * has not committed yet (SMTP stores the raw message before the send transaction). Must
   * exceed the longest time between writing a blob and committing the row that names it.
   */
  orphanGraceMs: number;
  /** Uploads no send claimed (attachment rows with message_id null) older than this are deleted, with their blobs. */
  uploadTtlMs: number;
}

export interface StorageSweepResult {
  /** Unclaimed attachment rows deleted (HTTP/MCP uploads never sent; SMTP staging a crash interrupted). */
  expiredUploads: number;
  /** Complete blobs no row names, older than the grace. */
  orphanBlobs: number;
  /** Writes that never finished: temp files (file store), chunks without a blob row (PostgreSQL store). */
  incompleteWrites: number;
}

const UPLOAD_BATCH = 500;

/**
 * Reclaims storage that crashes and abandoned uploads leave behind. Blobs are written before the
 * row that names them commits (blob-store.ts), so a process killed in between leaves a blob
 * nobody references; this is its recovery. Idempotent and safe to run on several workers at once.
 */
export class StorageSweeper {
  constructor(
    private readonly db: Database,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly options: StorageSweepOptions,
  ) {}

  async sweep(): Promise<StorageSweepResult> {
    const now = this.clock.now().getTime();
    const expiredUploads = await this.expireUploads(new Date(now - this.options.uploadTtlMs));
    const { orphanBlobs, incompleteWrites } = await this.deleteOrphans(new Date(now - this.options.orphanGraceMs));
    return { expiredUploads, orphanBlobs, incompleteWrites };
  }

  /**
   * Unclaimed uploads past their TTL. The row goes first, locked with SKIP LOCKED and deleted
   * only while still unclaimed, so a send claiming it at the same moment either wins (the row
   * stays) or finds it gone (400 ATTACHMENT_UNKNOWN); its blob goes after, if no row names it.
   */
  private async expireUploads(before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const keys = await deleteExpiredUploads(this.db, before, UPLOAD_BATCH);
      total += keys.length;
      for (const key of await this.unreferenced([...new Set(keys)])) await this.blobs.delete(key);
      if (keys.length < UPLOAD_BATCH) return total;
    }
  }

  private async deleteOrphans(before: Date): Promise<{ orphanBlobs: number; incompleteWrites: number }> {
    let orphanBlobs = 0;
    let incompleteWrites = 0;
    for await (const batch of this.blobs.list(before)) {
      for (const entry of batch.filter((e) => !e.complete)) {
        await this.blobs.delete(entry.key);
        incompleteWrites++;
      }
      for (const key of await this.unreferenced(batch.filter((e) => e.complete).map((e) => e.key))) {
        await this.blobs.delete(key);
        orphanBlobs++;
      }
    }
    return { orphanBlobs, incompleteWrites };
  }

  /** The keys no column of BLOB_REFERENCES names (one indexed lookup per key and column). */
  private async unreferenced(keys: string[]): Promise<string[]> {
    return unreferencedKeys(this.db, keys, BLOB_REFERENCES);
  }
}

/**
 * Runs the sweep on the worker role: a first pass soon after start (a pod restarted more often
 * than the interval still sweeps), then every `intervalMs`; 0 disables it.
 */
export function startStorageSweeper(
  sweeper: StorageSweeper,
  log: Logger,
  intervalMs: number,
): { stop(): Promise<void> } {
  if (intervalMs <= 0) return { stop: async () => undefined };
  let running: Promise<void> | null = null;
  const tick = () => {
    if (running) return;
    running = sweeper
      .sweep()
      .then((r) => {
        if (r.expiredUploads + r.orphanBlobs + r.incompleteWrites > 0) log.info('storage.swept', { ...r });
      })
      .catch((err) => log.warn('storage.sweep_failed', { err }))
      .finally(() => {
        running = null;
      });
  };
  const first = setTimeout(tick, Math.min(intervalMs, 60_000));
  const timer = setInterval(tick, intervalMs);
  first.unref();
  timer.unref();
  return {
    async stop() {
      clearTimeout(first);
      clearInterval(timer);
      await running;
    },
  };
}
