import type { Database } from '../../../storage/database.js';
import type { Logger } from '../../base/logger.js';
import { startBatchedPass } from '../../base/loops/batched-pass.js';
import { replyTextOfBodies } from './extract.js';
import { pendingReplyTexts, storeReplyTexts } from './reply-text.store.js';

/** Messages one pass fills per transaction. */
export const REPLY_TEXT_BATCH = 100;
/** How often the worker looks for messages waiting for their reply text. */
export const REPLY_TEXT_INTERVAL_MS = 1_000;

/**
 * Stores the reply text of messages that intake left without it (extractAtIngest), after their
 * commit and off the SMTP hot path: the worker's background pass, in batches, several workers
 * sharing the work (SKIP LOCKED). A read before the pass computes the same text itself
 * (toDetailExtracted), so the pass changes what a read costs, never what it answers.
 */
export class ReplyTextBackfill {
  constructor(private readonly db: Database) {}

  async fillSome(limit = REPLY_TEXT_BATCH): Promise<number> {
    return this.db.tx(async (trx) => {
      const rows = await pendingReplyTexts(trx, limit);
      if (rows.length > 0)
        await storeReplyTexts(
          trx,
          rows.map((r) => r.id),
          rows.map((r) => replyTextOfBodies(r.body_text, r.body_html)),
        );
      return rows.length;
    });
  }
}

/** The worker's pass: every interval, fill waiting messages in batches until none is left. */
export function startReplyTextBackfill(
  backfill: ReplyTextBackfill,
  log: Logger,
  options: { intervalMs?: number } = {},
): { stop(): Promise<void> } {
  return startBatchedPass(() => backfill.fillSome(), {
    batch: REPLY_TEXT_BATCH,
    intervalMs: options.intervalMs ?? REPLY_TEXT_INTERVAL_MS,
    onDone: (messages) => log.debug('extraction.reply_text_filled', { messages }),
    onError: (err) => log.warn('extraction.reply_text_failed', { err }),
  });
}
