import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { serve, stopProcess } from '../lib/processes.js';
import { scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { combineRounds, runLoad, type LoadFigures, type LoadOptions } from './load.js';
import { waitForGreeting } from './postfix.js';
import { loadConfig } from '../../src/config/config.js';
import { scrapeMetrics } from '../lib/scrape.js';

export interface BurstFigures {
  /** What the senders aimed at and what port 25 accepted. */
  targetRate: number;
  load: LoadFigures;
  workerProcesses: number;
  /** Rows of the inbound queue not yet stored, sampled every second from the burst's start. */
  depth: number[];
  maxDepth: number;
  /** The depth's growth over the burst's second half (least squares), messages per second. */
  depthGrowthPerSecond: number;
  /** From the burst's end until the queue was empty (null: not within `drainLimitSeconds`). */
  drainSeconds: number | null;
  /** SMTP_QUEUE_HIGH_WATER the smtp process ran with (flow control, intake-flow.ts). */
  highWater: number;
  /** MAIL FROMs flow control held, by outcome (mailbox_smtp_flow_waits_total of the smtp process). */
  flowWaits: { drained: number; delayed: number };
}

export interface BurstOptions {
  /** The service's settings; DATABASE_URL, MAILBOX_DATA_DIR, PORT and SMTP_MX_PORT are the burst's own. */
  env: Record<string, string>;
  /** The load on port 25 (clients, identities: `agent<i>@<domain>`); sent at `rate` for `seconds`. */
  load: Omit<LoadOptions, 'seconds' | 'ratePerSecond' | 'port'>;
  domain: string;
  rate: number;
  seconds: number;
  /** Ports: the smtp process's health port and MX listener, then one health port per worker process. */
  ports: { http: number; mx: number; workers: number[] };
  drainLimitSeconds?: number;
  /** SMTP_QUEUE_HIGH_WATER for the burst (the shipped default when unset). */
  highWater?: number;
}

/**
 * Port 25 under a steady load at `rate` (Postfix's queue rate in bench/smtp) with worker processes
 * storing behind it as the chart runs them (an `api,smtp` process, `worker` processes), on a
 * database of its own: does the queue depth stay bounded, and how long does what is left take once
 * the load stops? Every pass of the worker role runs (delivery, search, reply text), as deployed.
 */
export async function measureBurst(o: BurstOptions): Promise<BurstFigures> {
  const db = await scratchDatabase('mbx_bench_burst');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-bench-burst-'));
  const env = {
    ...o.env,
    DATABASE_URL: db.url,
    MAILBOX_DATA_DIR: dataDir,
    SMTP_MX_PORT: String(o.ports.mx),
    SMTP_SUBMISSION_PORT: '0', // any free port: the burst is port 25's
    SMTP_QUEUE_HIGH_WATER: String(o.highWater ?? loadConfig({}).SMTP_QUEUE_HIGH_WATER),
  };
  const processes = [];
  const client = new pg.Client({ connectionString: db.url });
  try {
    await seedMailboxes(
      env,
      o.domain,
      Array.from({ length: o.load.clients }, (_, i) => `agent${i}`),
    );
    processes.push(await serve('api,smtp', o.ports.http, env));
    await waitForGreeting(o.ports.mx);
    // HEALTH_SERVER: a worker process answers /healthz, which is how serve() knows it started.
    for (const port of o.ports.workers) processes.push(await serve('worker', port, { ...env, HEALTH_SERVER: 'true' }));
    await client.connect();
    const figures = await burst(o, client, processes.length - 1);
    return { ...figures, highWater: Number(env.SMTP_QUEUE_HIGH_WATER), flowWaits: await flowWaits(o.ports.http) };
  } finally {
    await client.end().catch(() => undefined);
    await Promise.all(processes.map(stopProcess));
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** mailbox_smtp_flow_waits_total{listener="mx"} of the process serving `httpPort`, by outcome. */
async function flowWaits(httpPort: number): Promise<{ drained: number; delayed: number }> {
  const metrics = await scrapeMetrics(`http://127.0.0.1:${httpPort}`);
  const count = (outcome: string) =>
    metrics.get(`mailbox_smtp_flow_waits_total{listener="mx",outcome="${outcome}"}`) ?? 0;
  return { drained: count('drained'), delayed: count('delayed') };
}

async function burst(
  o: BurstOptions,
  client: pg.Client,
  workerProcesses: number,
): Promise<Omit<BurstFigures, 'highWater' | 'flowWaits'>> {
  const pending = async () =>
    Number(
      (await client.query<{ n: string }>(`select count(*)::text as n from inbound_queue where status = 'pending'`))
        .rows[0]!.n,
    );
  const depth: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    for (let t = Date.now(); sampling; t += 1000) {
      depth.push(await pending());
      await new Promise((r) => setTimeout(r, Math.max(0, t + 1000 - Date.now())));
    }
  })();
  const load = combineRounds([
    await runLoad({ ...o.load, port: o.ports.mx, seconds: o.seconds, ratePerSecond: o.rate }),
  ]);
  sampling = false;
  await sampler;
  const ended = Date.now();
  const limit = ended + (o.drainLimitSeconds ?? 120) * 1000;
  let drainSeconds: number | null = null;
  while (Date.now() < limit) {
    if ((await pending()) === 0) {
      drainSeconds = Number(((Date.now() - ended) / 1000).toFixed(1));
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    targetRate: o.rate,
    load,
    workerProcesses,
    depth,
    maxDepth: Math.max(0, ...depth),
    depthGrowthPerSecond: Number(slope(depth.slice(Math.floor(depth.length / 2))).toFixed(1)),
    drainSeconds,
  };
}

/** The least-squares slope of `ys` sampled once a second. */
function slope(ys: number[]): number {
  const n = ys.length;
  if (n < 2) return 0;
  const mx = (n - 1) / 2;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  ys.forEach((y, x) => {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  });
  return num / den;
}
