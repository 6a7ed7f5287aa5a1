import { cpus } from 'node:os';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { percentile } from '../lib/measure.js';
import { cpuDelta, cpuSeconds, machineJiffies, postgresCpuSeconds, rssMb } from '../lib/proc.js';
import type { IpcChild } from '../lib/processes.js';
import type { SeededMailbox } from '../lib/scratch.js';
import type { DrainReply, FromSoakClient, ToSoakClient, VerifyReply } from './clients.js';
import {
  EXTERNAL,
  HEAP_TOTAL,
  HEAP_USED,
  QUEUE_DUE,
  QUEUE_OLDEST_AGE,
  QUEUE_SCHEDULED,
  scrapeMetrics,
} from '../lib/scrape.js';
import type { Service } from './setup.js';
import { LATENCY_CLASSES, type Recorder, type Window } from './stats.js';

// What the soak watches while it runs: memory every few seconds, the rest once per window, and the
// drain at the end.

export type ClientProcs = Array<IpcChild<ToSoakClient, FromSoakClient>>;

const MEMORY_PROBE_MS = 5_000;
const DRAIN_TIMEOUT_MS = 60_000;
const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** About every MEMORY_PROBE_MS for `windows` windows: RSS (/proc) and the V8 heap (/metrics) of each service process. */
export async function probeMemory(rec: Recorder, services: Service[], windows: number): Promise<void> {
  const perWindow = Math.max(1, Math.round(rec.windowMs / MEMORY_PROBE_MS));
  for (let k = 0; k < windows * perWindow; k++) {
    const wait = rec.startedAt + k * (rec.windowMs / perWindow) - performance.now();
    if (wait > 0) await sleep(wait);
    await Promise.all(
      services.map(async (s) => {
        const m = await scrapeMetrics(s.url).catch(() => new Map<string, number>());
        const rss = rssMb(s.child.pid);
        const mb = (series: string) => (m.get(series) ?? NaN) / MB;
        rec.probe(s.name, Math.floor(k / perWindow), {
          rssMb: rss,
          heapMb: mb(HEAP_USED),
          nonHeapMb: rss - mb(HEAP_TOTAL),
          externalMb: mb(EXTERNAL),
        });
      }),
    );
  }
}

/** At the end of each window: drain the clients, read CPU and the outbox, print one line. */
export async function sample(
  rec: Recorder,
  windows: number,
  services: Service[],
  redis: ChildProcess,
  clientProcs: ClientProcs,
  dbName: string,
): Promise<void> {
  const loadgenCpu = () =>
    process.cpuUsage().user / 1e6 +
    process.cpuUsage().system / 1e6 +
    clientProcs.reduce((a, p) => a + cpuSeconds(p.child.pid), 0);
  const serviceCpu = () => services.map((s) => cpuSeconds(s.child.pid));
  const read = () => ({
    at: performance.now(),
    services: serviceCpu(),
    redis: cpuSeconds(redis.pid),
    pg: postgresCpuSeconds(dbName),
    loadgen: loadgenCpu(),
    machine: machineJiffies(),
  });
  let last = read();
  const cores = cpus().length;
  for (let w = 0; w < windows; w++) {
    const wait = rec.startedAt + (w + 1) * rec.windowMs - performance.now();
    if (wait > 0) await sleep(wait);
    const window = rec.windowAt(w);
    const drains = await Promise.all(clientProcs.map((p) => p.ask<DrainReply>({ cmd: 'drain' })));
    for (const d of drains) window.classes.event.latencies.push(...d.latencies);
    const m = await scrapeMetrics(services[0]!.url).catch(() => new Map<string, number>());
    const now = read();
    const seconds = (now.at - last.at) / 1000;
    const pct = (cpu: number) => (cpu / (seconds * cores)) * 100;
    const serviceDeltas = now.services.map((c, i) => c - last.services[i]!);
    const pg = cpuDelta(last.pg, now.pg);
    window.resources = {
      atS: (now.at - rec.startedAt) / 1000,
      processCpuPct: Object.fromEntries(services.map((s, i) => [s.name, (serviceDeltas[i]! / seconds) * 100])),
      cpuPct: {
        sut: pct(serviceDeltas.reduce((a, b) => a + b, 0) + now.redis - last.redis + pg),
        postgres: pct(pg),
        loadgen: pct(now.loadgen - last.loadgen),
        machine: ((now.machine.busy - last.machine.busy) / (now.machine.total - last.machine.total)) * 100,
      },
      outbox: {
        due: m.get(QUEUE_DUE) ?? NaN,
        scheduled: m.get(QUEUE_SCHEDULED) ?? NaN,
        oldestAgeS: m.get(QUEUE_OLDEST_AGE) ?? NaN,
      },
      events: {
        deliveries: drains.reduce((a, d) => a + d.deliveries, 0),
        duplicates: drains.reduce((a, d) => a + d.duplicates, 0),
        outOfOrder: drains.reduce((a, d) => a + d.outOfOrder, 0),
        disconnects: drains.reduce((a, d) => a + d.disconnects, 0),
      },
      maxLagMs: rec.lagMs,
    };
    rec.lagMs = 0;
    last = now;
    for (const d of drains) if (d.firstProblem) console.log(`  real-time: ${d.firstProblem}`);
    console.log(progressLine(rec, w, window, services));
  }
}

function progressLine(rec: Recorder, w: number, window: Window, services: Service[]): string {
  const r = window.resources!;
  const p99 = LATENCY_CLASSES.map(
    (c) =>
      `${c.replace(/^(http|smtp)\./, '')} ${percentile(
        [...window.classes[c].latencies].sort((a, b) => a - b),
        99,
      ).toFixed(0)}`,
  ).join(' ');
  const errors = LATENCY_CLASSES.reduce((a, c) => a + window.classes[c].errors, 0);
  const rss = services
    .map((s) => {
      const m = rec.memory(window, s.name);
      return `${s.name} ${m.rssMb.last.toFixed(0)}/${m.heapMb.last.toFixed(0)}`;
    })
    .join(' ');
  return (
    `[${String(w).padStart(3)}] ${r.atS.toFixed(0)} s  p99 ms: ${p99}  errors ${errors}  events ${r.events.deliveries} dup ${r.events.duplicates}  ` +
    `CPU % sut ${r.cpuPct.sut.toFixed(0)} (pg ${r.cpuPct.postgres.toFixed(0)}) loadgen ${r.cpuPct.loadgen.toFixed(0)} machine ${r.cpuPct.machine.toFixed(0)}  ` +
    `RSS/heap MB ${rss}  outbox due ${r.outbox.due}  lag ${r.maxLagMs.toFixed(0)} ms`
  );
}

/** Waits (up to a minute) until no outbox job is pending and every socket holds its mailbox's events up to the head. */
export async function drain(clientProcs: ClientProcs, databaseUrl: string, mailboxes: SeededMailbox[]) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    for (;;) {
      const pendingJobs = Number(
        (await client.query<{ n: string }>("select count(*) as n from outbox_job where status = 'pending'")).rows[0]!.n,
      );
      const rows = (
        await client.query<{ address: string; event_seq: string }>('select address, event_seq from mailbox')
      ).rows;
      const seq = new Map(rows.map((r) => [r.address, Number(r.event_seq)]));
      const heads = mailboxes.map((mb) => seq.get(mb.address) ?? 0);
      const parts = await Promise.all(clientProcs.map((p) => p.ask<VerifyReply>({ cmd: 'verify', heads })));
      const verify: VerifyReply = {
        sockets: parts.reduce((a, v) => a + v.sockets, 0),
        expected: parts.reduce((a, v) => a + v.expected, 0),
        missed: parts.reduce((a, v) => a + v.missed, 0),
        duplicates: parts.reduce((a, v) => a + v.duplicates, 0),
        outOfOrder: parts.reduce((a, v) => a + v.outOfOrder, 0),
        firstMissed: parts.find((v) => v.firstMissed)?.firstMissed ?? null,
      };
      if ((pendingJobs === 0 && verify.missed === 0) || Date.now() > deadline) return { pendingJobs, verify };
      await sleep(1000);
    }
  } finally {
    await client.end();
  }
}
