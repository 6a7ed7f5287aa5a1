import { performance } from 'node:perf_hooks';
import { openOrm } from '../../src/storage/orm.js';
import { Database } from '../../src/storage/database.js';
import { SearchIndex } from '../../src/core/search/search-index.store.js';
import { ReplyTextBackfill } from '../../src/core/extraction/reply-text-backfill.js';
import { cpuMeter } from './cpu.js';

export interface IndexingFigures {
  messages: number;
  rate: number;
  postgresCpuMsPerMessage: number;
}

export interface DeferredWork {
  /** Search vectors of the accepted mail (the core's SearchIndex, batches of 200). */
  search: IndexingFigures;
  /** The reply text of the inbound messages (ReplyTextBackfill): its CPU is the worker's (this process). */
  replyText: IndexingFigures & { workerCpuMsPerMessage: number };
}

/**
 * The work intake leaves behind, run as the worker's passes do, one after the other on the
 * accepted mail, each timed with PostgreSQL's (and this process's) CPU per message. Intake got
 * cheaper by this much; here is where it went (docs/api.md, "Search" and "Extraction").
 */
export async function measureDeferredWork(databaseUrl: string, database: string): Promise<DeferredWork> {
  const search = await measurePass(databaseUrl, database, (db) => {
    const index = new SearchIndex(db);
    return () => index.indexSome();
  });
  // The search vector is computed by PostgreSQL alone: its row reports PostgreSQL's CPU only.
  const searchFigures = {
    messages: search.messages,
    rate: search.rate,
    postgresCpuMsPerMessage: search.postgresCpuMsPerMessage,
  };
  const replyText = await measurePass(databaseUrl, database, (db) => {
    const backfill = new ReplyTextBackfill(db);
    return () => backfill.fillSome();
  });
  return { search: searchFigures, replyText };
}

/** Runs one pass's step until it finds nothing left, on a connection of its own. */
async function measurePass(
  databaseUrl: string,
  database: string,
  stepOf: (db: Database) => () => Promise<number>,
): Promise<IndexingFigures & { workerCpuMsPerMessage: number }> {
  const orm = await openOrm({ databaseUrl, poolMax: 1 });
  try {
    const step = stepOf(new Database(orm));
    const meter = cpuMeter(process.pid, database);
    const t0 = performance.now();
    let messages = 0;
    for (let n = await step(); n > 0; n = await step()) messages += n;
    const seconds = (performance.now() - t0) / 1000;
    const cpu = meter();
    const per = (ms: number) => Number((ms / Math.max(1, messages)).toFixed(2));
    return {
      messages,
      rate: Math.round(messages / Math.max(seconds, 1e-3)),
      postgresCpuMsPerMessage: per(cpu.postgres),
      workerCpuMsPerMessage: per(cpu.server),
    };
  } finally {
    await orm.close(true);
  }
}
