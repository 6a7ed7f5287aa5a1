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
  search: IndexingFigures;
  /** The reply text of the inbound messages (ReplyTextBackfill): its CPU is the worker's (this process). */
  replyText: IndexingFigures & { workerCpuMsPerMessage: number };
}

/** Both passes the worker runs after intake, one after the other, on the accepted mail. */
export async function measureDeferredWork(databaseUrl: string, database: string): Promise<DeferredWork> {
  const search = await measureSearchIndexing(databaseUrl, database);
  const orm = await openOrm({ databaseUrl, poolMax: 1 });
  try {
    const backfill = new ReplyTextBackfill(new Database(orm));
    const meter = cpuMeter(process.pid, database);
    const t0 = performance.now();
    let messages = 0;
    for (let n = await backfill.fillSome(); n > 0; n = await backfill.fillSome()) messages += n;
    const seconds = (performance.now() - t0) / 1000;
    const cpu = meter();
    const per = (ms: number) => Number((ms / Math.max(1, messages)).toFixed(2));
    return {
      search,
      replyText: {
        messages,
        rate: Math.round(messages / Math.max(seconds, 1e-3)),
        postgresCpuMsPerMessage: per(cpu.postgres),
        workerCpuMsPerMessage: per(cpu.server),
      },
    };
  } finally {
    await orm.close(true);
  }
}

/**
 * The work intake leaves behind: search vectors of the accepted mail, filled as the worker's
 * pass does (the core's SearchIndex, batches of 200), timed with PostgreSQL's CPU per message.
 * Intake got cheaper by this much; here is where it went (docs/api.md, "Search").
 */
export async function measureSearchIndexing(databaseUrl: string, database: string): Promise<IndexingFigures> {
  const orm = await openOrm({ databaseUrl, poolMax: 1 });
  try {
    const index = new SearchIndex(new Database(orm));
    const meter = cpuMeter(process.pid, database);
    const t0 = performance.now();
    let messages = 0;
    for (let n = await index.indexSome(); n > 0; n = await index.indexSome()) messages += n;
    const seconds = (performance.now() - t0) / 1000;
    const cpu = meter();
    return {
      messages,
      rate: Math.round(messages / Math.max(seconds, 1e-3)),
      postgresCpuMsPerMessage: Number((cpu.postgres / Math.max(1, messages)).toFixed(2)),
    };
  } finally {
    await orm.close(true);
  }
}
