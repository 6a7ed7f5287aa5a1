import { ID_PREFIX, newId } from '../../base/ids.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import { claimSentRaw } from './delivery.store.js';
import type { Database } from '../../../storage/database.js';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';

/** What deciding and storing the source needs of an outbound message. */
interface SentRawMessage {
  id: string;
  /** What a 587 client submitted; null for API and console sends. */
  rawBlobKey: string | null;
  sentRawBlobKey?: string | null;
}

/**
 * Stores an outbound message's source as it leaves (the DKIM-signed transfer form), once: the
 * first attempt that builds it wins and later attempts, which sign afresh, keep the first. A
 * message submitted over 587 keeps the raw it was submitted with and gets none. The blob is
 * written before the row names it; a crash in between leaves an orphan for the storage sweeper.
 */
export async function keepSentRaw(
  d: { db: Database; blobs: BlobStore },
  m: SentRawMessage,
  raw: Buffer,
  at: Date,
): Promise<void> {
  if (!needsSentRaw(m)) return;
  const key = `raw/${newId(ID_PREFIX.message, at.getTime())}`;
  await d.blobs.put(key, raw);
  const named = await claimSentRaw(d.db, m.id, key).catch(async (err: unknown) => {
    // After a lost COMMIT the row may name it after all: leave the blob to the storage sweeper.
    if (!isStorageUnavailable(err)) await d.blobs.delete(key).catch(() => undefined);
    throw err;
  });
  if (named) m.sentRawBlobKey = key;
  else await d.blobs.delete(key).catch(() => undefined);
}

export const needsSentRaw = (m: SentRawMessage): boolean => !m.rawBlobKey && !m.sentRawBlobKey;
