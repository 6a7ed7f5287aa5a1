import { performance } from 'node:perf_hooks';
import { openOrm } from '../../src/storage/orm.js';
import { Database } from '../../src/storage/database.js';
import { SearchIndex } from '../../src/core/state/search/search-index.store.js';
import { ReplyTextBackfill } from '../../src/core/state/extraction/reply-text-backfill.js';
import { IntakeQueueWorker, type IntakeQueue } from '../../src/core/flows/intake/intake-queue.worker.js';
import type { ClaimedRow } from '../../src/core/flows/intake/intake-queue.store.js';
import { InboundQueue } from '../../src/core/flows/inbound/inbound-queue.js';
import { SubmissionQueue } from '../../src/core/flows/submission/submission-queue.js';
import type { Services } from '../../src/core/services.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { cpuMeter } from './cpu.js';

export interface IndexingFigures {
  messages: number;
  rate: number;
  postgresCpuMsPerMessage: number;
}

export interface DeferredWork {
  /**
   * Port 25's queued intake delivered into the mailboxes (InboundQueueWorker: parse, SPF/DKIM/
   * DMARC, message rows), its CPU the worker's (this process) and PostgreSQL's.
   */
  inboundDelivery: IndexingFigures & { workerCpuMsPerMessage: number };
  /**
   * Port 587's queued submission written as messages (the worker: parse, attachments, the message
   * rows, outbox job, audit entry, event), its CPU the worker's and PostgreSQL's.
   */
  submissionWrite: IndexingFigures & { workerCpuMsPerMessage: number };
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
export async function measureDeferredWork(
  env: Record<string, string>,
  databaseUrl: string,
  database: string,
): Promise<DeferredWork> {
  // First: the other passes work on the messages this one stores.
  const inboundDelivery = await measureQueue(
    env,
    database,
    (s) => new InboundQueue(s.db, s.transport.inbound, silentLogger),
  );
  const submissionWrite = await measureQueue(
    env,
    database,
    (s) => new SubmissionQueue(s.db, s.transport.submission, silentLogger),
  );
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
  return { inboundDelivery, submissionWrite, search: searchFigures, replyText };
}

/** An intake queue stored by the worker's own code, in this process, until it is empty. */
async function measureQueue<Q extends ClaimedRow>(
  env: Record<string, string>,
  database: string,
  queueOf: (services: Services) => IntakeQueue<Q>,
): Promise<IndexingFigures & { workerCpuMsPerMessage: number }> {
  const runtime = await startRuntime(loadConfig({ ...env, LOG_LEVEL: 'error' }), { roles: [], log: silentLogger });
  try {
    const s = runtime.services;
    const worker = benchQueueWorker(s, queueOf(s));
    return await timed(database, () => worker.runOnce());
  } finally {
    await runtime.close();
  }
}

/** Runs one pass's step until it finds nothing left, on a connection of its own. */
async function measurePass(
  databaseUrl: string,
  database: string,
  stepOf: (db: Database) => () => Promise<number>,
): Promise<IndexingFigures & { workerCpuMsPerMessage: number }> {
  const orm = await openOrm({ databaseUrl, poolMax: 1 });
  try {
    return await timed(database, stepOf(new Database(orm)));
  } finally {
    await orm.close(true);
  }
}

/** Runs `step` until it finds nothing left, timed, with this process's and PostgreSQL's CPU. */
async function timed(
  database: string,
  step: () => Promise<number>,
): Promise<IndexingFigures & { workerCpuMsPerMessage: number }> {
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
}

/** The worker's queue loop as the bench drives it: one pass at a time (runOnce), batches of 32, no retries. */
export function benchQueueWorker<Q extends ClaimedRow>(s: Services, queue: IntakeQueue<Q>): IntakeQueueWorker<Q> {
  return new IntakeQueueWorker(s.db, queue, s.clock, silentLogger, {
    workerId: 'bench',
    pollIntervalMs: 1_000,
    leaseMs: 60_000,
    batch: 32,
    retry: { baseMs: 1_000, maxMs: 1_000 },
    maxAttempts: 1,
  });
}
