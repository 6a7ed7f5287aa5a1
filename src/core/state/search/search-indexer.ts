import type { Logger } from '../../base/logger.js';
import { startBatchedPass } from '../../base/loops/batched-pass.js';
import { SEARCH_INDEX_BATCH, type SearchIndex } from './search-index.store.js';

/** How often the worker looks for messages waiting to be indexed. */
export const SEARCH_INDEX_INTERVAL_MS = 1_000;

/**
 * The worker's background pass: every interval, index waiting messages in batches until none is
 * left. Several workers at once share the work (SKIP LOCKED).
 */
export function startSearchIndexer(
  index: SearchIndex,
  log: Logger,
  options: { intervalMs?: number } = {},
): { stop(): Promise<void> } {
  return startBatchedPass(() => index.indexSome(), {
    batch: SEARCH_INDEX_BATCH,
    intervalMs: options.intervalMs ?? SEARCH_INDEX_INTERVAL_MS,
    onDone: (messages) => log.debug('search.indexed', { messages }),
    onError: (err) => log.warn('search.index_failed', { err }),
  });
}
