import { fork } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { openOrm } from '../../src/storage/orm.js';
import { Database } from '../../src/storage/database.js';
import { SearchIndex } from '../../src/core/state/search/search-index.store.js';
import { ReplyTextBackfill } from '../../src/core/state/extraction/reply-text-backfill.js';
import { IntakeQueueWorker } from '../../src/core/flows/intake/intake-queue.worker.js';
import type { ClaimedRow } from '../../src/core/flows/intake/intake-queue.store.js';
import type { IntakeQueue } from '../../src/core/flows/intake/intake-queue.worker.js';
import { InboundQueue } from '../../src/core/flows/inbound/inbound-queue.js';
import { SubmissionQueue } from '../../src/core/flows/submission/submission-queue.js';
import type { Services } from '../../src/core/services.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { silentLogger, type Logger } from '../../src/core/base/logger.js';
import { createPinoLogger } from '../../src/logging/pino-logger.js';
import { cpuMeter } from './cpu.js';
import { sampleBackendStates, type BackendStates } from './backend-states.js';

/**
 * Worker processes draining each pass at once, as the chart's worker Deployment runs them
 * (replicas sharing the queue by SKIP LOCKED, each with its own pool); one Node thread tops out
 * below what PostgreSQL on two cores can take.
 */
export const DRAIN_PROCESSES = Number(process.env.BENCH_DRAIN_PROCESSES ?? 2);

export interface IndexingFigures {
  messages: number;
  rate: number;
  postgresCpuMsPerMessage: number;
  /** What the database's backends were doing during the pass (sampled). */
  backends?: BackendStates;
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
  const drain = (pass: DrainPass) => drainInProcesses(pass, { ...env, DATABASE_URL: databaseUrl }, database);
  // First: the other passes work on the messages this one stores.
  const inboundDelivery = await drain('inbound');
  const submissionWrite = await drain('submission');
  const search = await drain('search');
  // The search vector is computed by PostgreSQL alone: its row reports PostgreSQL's CPU only.
  const searchFigures = {
    messages: search.messages,
    rate: search.rate,
    postgresCpuMsPerMessage: search.postgresCpuMsPerMessage,
  };
  const replyText = await drain('replyText');
  return { inboundDelivery, submissionWrite, search: searchFigures, replyText };
}

type DrainPass = 'inbound' | 'submission' | 'search' | 'replyText';

/**
 * One pass run by DRAIN_PROCESSES processes until none finds anything left, timed from the moment
 * all are ready; the worker CPU is theirs summed, PostgreSQL's that of every backend of the database.
 */
async function drainInProcesses(
  pass: DrainPass,
  env: Record<string, string>,
  database: string,
): Promise<IndexingFigures & { workerCpuMsPerMessage: number }> {
  const children = Array.from({ length: DRAIN_PROCESSES }, () =>
    // Logging as the worker role logs (env's LOG_LEVEL, one line a stored message at info), to /dev/null.
    fork(new URL(import.meta.url).pathname, [], {
      env: { ...process.env, ...env, BENCH_DRAIN_PASS: pass },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    }),
  );
  try {
    await Promise.all(children.map((c) => once(c, 'message')));
    const states = await sampleBackendStates(database);
    const meter = cpuMeter(process.pid, database);
    const t0 = performance.now();
    const done = children.map((c) => once(c, 'message').then(([m]) => m as { messages: number; cpuMs: number }));
    for (const c of children) c.send('go');
    const results = await Promise.all(done);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = meter(); // before the children close their connections: a gone backend's CPU cannot be read
    const backends = await states();
    for (const c of children) c.send('close');
    const messages = results.reduce((n, r) => n + r.messages, 0);
    const per = (ms: number) => Number((ms / Math.max(1, messages)).toFixed(2));
    return {
      messages,
      rate: Math.round(messages / Math.max(seconds, 1e-3)),
      postgresCpuMsPerMessage: per(cpu.postgres),
      workerCpuMsPerMessage: per(results.reduce((n, r) => n + r.cpuMs, 0)),
      backends,
    };
  } finally {
    await Promise.all(
      children.map((c) =>
        c.exitCode !== null ? undefined : Promise.race([once(c, 'exit'), new Promise((r) => setTimeout(r, 10_000))]),
      ),
    );
    for (const c of children) c.kill();
  }
}

/** A drain process: opens what `pass` needs, says it is ready, runs the pass on 'go' until it finds nothing, reports. */
async function drainChild(pass: DrainPass): Promise<void> {
  const { step, close } = await openPass(pass);
  process.send!('ready');
  await once(process, 'message');
  const usage0 = process.cpuUsage();
  let messages = 0;
  for (let n = await step(); n > 0; n = await step()) messages += n;
  const usage = process.cpuUsage(usage0);
  process.send!({ messages, cpuMs: (usage.user + usage.system) / 1000 });
  await once(process, 'message');
  await close();
}

async function openPass(pass: DrainPass): Promise<{ step: () => Promise<number>; close(): Promise<void> }> {
  if (pass === 'inbound' || pass === 'submission') {
    const config = loadConfig(process.env);
    const log = createPinoLogger(config.LOG_LEVEL);
    const runtime = await startRuntime(config, { roles: [], log });
    const s = runtime.services;
    const queue =
      pass === 'inbound'
        ? new InboundQueue(s.db, s.transport.inbound, log)
        : new SubmissionQueue(s.db, s.transport.submission, log);
    const worker = benchQueueWorker(s, queue as IntakeQueue<ClaimedRow>, `bench-${process.pid}`, log);
    return { step: () => worker.drain(), close: () => runtime.close() };
  }
  const orm = await openOrm({ databaseUrl: process.env.DATABASE_URL!, poolMax: 1 });
  const db = new Database(orm);
  const step = pass === 'search' ? () => new SearchIndex(db).indexSome() : () => new ReplyTextBackfill(db).fillSome();
  return { step, close: () => orm.close(true) };
}

/** The worker's queue loop as the bench drives it (drain: the batch kept full, as the running loop keeps it), batches of 32, no retries. */
export function benchQueueWorker<Q extends ClaimedRow>(
  s: Services,
  queue: IntakeQueue<Q>,
  workerId = 'bench',
  log: Logger = silentLogger,
): IntakeQueueWorker<Q> {
  return new IntakeQueueWorker(s.db, queue, s.clock, log, {
    workerId,
    pollIntervalMs: 1_000,
    leaseMs: 60_000,
    batch: 32,
    retry: { baseMs: 1_000, maxMs: 1_000 },
    maxAttempts: 1,
  });
}

const childPass = process.env.BENCH_DRAIN_PASS as DrainPass | undefined;
if (childPass)
  drainChild(childPass).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
