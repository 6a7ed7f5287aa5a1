import type { Logger } from '../logger.js';
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
  let running: Promise<void> | null = null;
  let stopped = false;
  const pass = async () => {
    let indexed = 0;
    for (let n = SEARCH_INDEX_BATCH; n === SEARCH_INDEX_BATCH && !stopped;) {
      n = await index.indexSome();
      indexed += n;
    }
    if (indexed > 0) log.debug('search.indexed', { messages: indexed });
  };
  const tick = () => {
    if (running) return;
    running = pass()
      .catch((err) => log.warn('search.index_failed', { err }))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, options.intervalMs ?? SEARCH_INDEX_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
