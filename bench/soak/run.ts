import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { percentile, table } from '../lib/measure.js';
import { IpcChild } from '../lib/processes.js';
import type { ConnectReply, DrainReply, FromSoakClient, SoakClientSpec, ToSoakClient } from './clients.js';
import { drain, probeMemory, sample, type ClientProcs } from './sampler.js';
import { INBOUND_SENDER, startSystem, type System } from './setup.js';
import { LATENCY_CLASSES, OP_CLASSES, Recorder, type Window } from './stats.js';
import { Traffic, type Rates } from './traffic.js';
import { latencyTable, resourceTable, thirds, verdict, type Totals } from './verdict.js';

// make soak: a steady, open-loop mix of HTTP, SMTP and real-time traffic for SOAK_MINUTES against
// real service processes (two `api,realtime,worker`, one `smtp`) on a scratch PostgreSQL database
// and a private Redis. Every SOAK_WINDOW_SECONDS it samples memory, CPU, latency, errors and event
// delivery; at the end it prints the windows and a pass/fail verdict and exits non-zero on a FAIL.

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const WINDOW_S = Number(process.env.SOAK_WINDOW_SECONDS ?? 30);
/**
 * Left out of the verdict: 5 minutes, or a fifth of a shorter run. Besides JIT and pools, RSS
 * climbs to a plateau in the first minutes at this rate (~300 → ~440 MB per API process in the
 * first 2–3 min, measured) as V8 and malloc reach their high-water marks; 3 minutes was too close.
 */
const WARMUP_MIN = Number(process.env.SOAK_WARMUP_MINUTES ?? Math.min(5, MINUTES / 5));
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 300);
const MAILBOXES = Number(process.env.SOAK_MAILBOXES ?? 20);
const RATE_SCALE = Number(process.env.SOAK_RATE_SCALE ?? 1);
const CLIENT_PROCS = 2;
/**
 * Operations per second per class (× SOAK_RATE_SCALE). Measured on 2 cores: the services, Redis
 * and their PostgreSQL backends use ~6 % of the machine per 28 ops/s of this mix on top of ~4 % idle
 * work, the load generator ~2 %; so this mix (168 ops/s, ~1 600 event deliveries/s) keeps it at
 * ~50–60 %, below saturation, where latency reflects the service rather than a queue for the CPU.
 */
const BASE_RATES: Rates = {
  'http.list': 48,
  'http.get': 48,
  'http.read-state': 18,
  'http.delete': 12,
  'http.send': 12,
  'smtp.submit': 12,
  'smtp.inbound': 18,
};

async function main(): Promise<void> {
  const rates = Object.fromEntries(OP_CLASSES.map((c) => [c, BASE_RATES[c] * RATE_SCALE])) as Rates;
  const windows = Math.ceil((MINUTES * 60) / WINDOW_S);
  const warmupWindows = Math.ceil((WARMUP_MIN * 60) / WINDOW_S);
  const cut = thirds(windows, warmupWindows); // fails fast on a run too short to judge
  const system = await startSystem(MAILBOXES);
  const clientProcs: ClientProcs = [];
  let traffic: Traffic | null = null;
  try {
    const connectFailures = await connectClients(system, clientProcs);
    const header =
      `soak — ${MINUTES} min, windows of ${WINDOW_S} s (warm-up ${warmupWindows}), ${MAILBOXES} mailboxes, ${CLIENTS} Socket.IO clients, ` +
      `services: 2 × api,realtime,worker + 1 × smtp on PostgreSQL (scratch database) and a private Redis; ${cpus().length} cores, node ${process.version}\n` +
      `rates per second: ${OP_CLASSES.map((c) => `${c} ${rates[c]}`).join(', ')}`;
    console.log(header);

    const rec = new Recorder(WINDOW_S * 1000, performance.now());
    traffic = new Traffic(
      rec,
      {
        apiUrls: system.apiUrls,
        submissionPort: system.submissionPort,
        mxPort: system.mxPort,
        inboundFrom: INBOUND_SENDER,
      },
      system.mailboxes,
    );
    const endsAt = rec.startedAt + windows * WINDOW_S * 1000;
    const watching = Promise.all([
      sample(rec, windows, system.services, system.redis, clientProcs, system.databaseName),
      probeMemory(rec, system.services, windows),
    ]);
    await traffic.run(rates, endsAt);
    await watching;
    await traffic.settle();

    // Drain: every outbox job delivered, every socket level with its mailbox's head.
    const drained = await drain(clientProcs, system.databaseUrl, system.mailboxes);
    let disconnects = rec.windows.reduce((a, w) => a + (w.resources?.events.disconnects ?? 0), 0);
    for (const d of await Promise.all(clientProcs.map((p) => p.ask<DrainReply>({ cmd: 'drain' })))) {
      rec.windows.at(-1)!.classes.event.latencies.push(...d.latencies); // late arrivals of the last window's events
      disconnects += d.disconnects;
    }
    const totals: Totals = {
      errors: rec.windows.reduce((a, w) => a + OP_CLASSES.reduce((b, c) => b + w.classes[c].errors, 0), 0),
      skippedAfterWarmup: rec.windows
        .slice(warmupWindows)
        .reduce((a, w) => a + OP_CLASSES.reduce((b, c) => b + w.classes[c].skipped, 0), 0),
      realtime: {
        connectFailures,
        disconnects,
        expected: drained.verify.expected,
        missed: drained.verify.missed,
        duplicates: drained.verify.duplicates,
        outOfOrder: drained.verify.outOfOrder,
      },
      serverErrorLines: system.errorLog.lines,
      undelivered: drained.pendingJobs,
    };
    const processNames = system.services.map((s) => s.name);
    const checks = verdict(rec, cut, processNames, totals);
    const pass = checks.every((c) => c.pass);

    const per = Math.max(1, Math.round((MINUTES > 10 ? 300 : 60) / WINDOW_S));
    console.log(
      `\n${header}\n\nlatency p50 / p99 ms per ${(per * WINDOW_S) / 60} min (event: occurredAtTs → arrival on a socket)\n`,
    );
    console.log(latencyTable(rec.windows, per, WINDOW_S));
    console.log(
      '\nmemory (lowest–highest probe), CPU (SUT: services + redis + our PostgreSQL backends; % of all cores), event deliveries, outbox\n',
    );
    console.log(resourceTable(rec, per, processNames));
    console.log(
      `\nverdict: first third windows ${cut.first[0]}–${cut.first.at(-1)}, last third ${cut.last[0]}–${cut.last.at(-1)}; real-time out of order: ${totals.realtime.outOfOrder}\n`,
    );
    console.log(
      table(
        checks.map((c) => ({ check: c.check, figure: c.figure, limit: c.limit, result: c.pass ? 'PASS' : 'FAIL' })),
      ),
    );
    for (const [k, n] of rec.errorCounts) console.log(`error ×${n}: ${k}`);
    for (const line of system.errorLog.samples) console.log(`server error log: ${line}`);
    if (drained.verify.firstMissed) console.log(`first missed: ${drained.verify.firstMissed}`);
    console.log(`\nsoak: ${pass ? 'PASS' : 'FAIL'}`);

    mkdirSync('bench/results', { recursive: true });
    const file = `bench/results/soak-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.json`;
    writeFileSync(
      file,
      JSON.stringify(
        {
          minutes: MINUTES,
          windowSeconds: WINDOW_S,
          warmupWindows,
          mailboxes: MAILBOXES,
          clients: CLIENTS,
          rates,
          cores: cpus().length,
          node: process.version,
          thirds: cut,
          checks,
          pass,
          totals,
          errorCounts: Object.fromEntries(rec.errorCounts),
          errorSamples: rec.errorSamples,
          serverErrors: system.errorLog.samples,
          windows: rec.windows.map((w) => summarize(rec, w, processNames)),
        },
        null,
        2,
      ),
    );
    console.log(`written to ${file}`);
    if (!pass) process.exitCode = 1;
  } finally {
    traffic?.close();
    for (const p of clientProcs) p.close({ cmd: 'close' });
    await system.close();
  }
}

/** Client i follows mailbox i % MAILBOXES on API process i % 2; returns how many failed to connect. */
async function connectClients(system: System, procs: ClientProcs): Promise<number> {
  const specs: SoakClientSpec[][] = Array.from({ length: CLIENT_PROCS }, () => []);
  for (let i = 0; i < CLIENTS; i++) {
    specs[i % CLIENT_PROCS]!.push({
      url: system.apiUrls[i % system.apiUrls.length]!,
      token: system.mailboxes[i % MAILBOXES]!.token,
      mailbox: i % MAILBOXES,
    });
  }
  for (let i = 0; i < CLIENT_PROCS; i++) procs.push(new IpcChild<ToSoakClient, FromSoakClient>('bench/soak/clients'));
  const replies = await Promise.all(
    procs.map((p, i) => p.ask<ConnectReply>({ cmd: 'connect', specs: specs[i]!, concurrency: 50 })),
  );
  const failed = replies.reduce((a, r) => a + r.failed, 0);
  if (failed)
    console.log(
      `${failed} of ${CLIENTS} real-time clients failed to connect: ${replies.find((r) => r.firstError)?.firstError}`,
    );
  return failed;
}

/** A window for the JSON file: figures, not the raw samples. */
function summarize(rec: Recorder, w: Window, names: string[]) {
  return {
    memory: Object.fromEntries(names.map((n) => [n, rec.memory(w, n)])),
    classes: Object.fromEntries(
      LATENCY_CLASSES.map((c) => {
        const l = [...w.classes[c].latencies].sort((a, b) => a - b);
        return [
          c,
          {
            n: l.length,
            p50: percentile(l, 50),
            p99: percentile(l, 99),
            max: l.at(-1) ?? null,
            errors: w.classes[c].errors,
            skipped: w.classes[c].skipped,
          },
        ];
      }),
    ),
    resources: w.resources,
  };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
