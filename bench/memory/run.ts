import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { table } from '../lib/measure.js';
import { rssMb } from '../lib/proc.js';
import { freePort, script, startProcess, stopProcess } from '../lib/processes.js';
import { writeRatios, type RatioRow } from '../lib/ratios.js';
import { scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { seedMessages } from '../http/seed.js';
import { shippedNodeFlags } from '../lib/node-flags.js';

// bench/memory: resident memory of each role alone, idle after start, and of the api
// role and the all-in-one process under the list load of bench/http (16 connections), on
// PostgreSQL. A bare `node -e` process is measured in the same run as the floor of any Node service.
//
// Each build runs in the same run, one after the other: this checkout with the V8 flags it ships
// (`npm start`, the image: package.json's start script is their one source), this checkout
// without them (what per-role loading alone gives), and, with BENCH_MEMORY_BEFORE=<dist dir of
// another build> (e.g. main's, built in a `git worktree`), that build as it ran before.
const IDLE_SECONDS = Number(process.env.BENCH_MEMORY_IDLE_SECONDS ?? 10);
const LOAD_SECONDS = Number(process.env.BENCH_MEMORY_LOAD_SECONDS ?? 10);
// BENCH_MEMORY_ROLES="api;api,realtime,smtp,worker" narrows the processes measured.
const ROLES = (process.env.BENCH_MEMORY_ROLES ?? 'api;realtime;smtp;worker;api,realtime,smtp,worker').split(';');
/** What openagentemail states in its README; not measured here. */
const PEER_IDLE_MB = 190;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Build {
  name: string;
  /** Node arguments before `serve`: flags and the CLI script. */
  args: string[];
}

interface Figures {
  idle: number;
  peak: number;
  rps: number;
}

async function measureRole(build: Build, roles: string, env: Record<string, string>, token: string): Promise<Figures> {
  const port = await freePort();
  const child: ChildProcess = await startProcess(
    [...build.args, 'serve', '--roles', roles],
    {
      ...env,
      PORT: String(port),
      SMTP_SUBMISSION_PORT: String(await freePort()),
      SMTP_MX_PORT: String(await freePort()),
      // smtp and worker alone serve /healthz only when asked (as their Kubernetes probes do).
      HEALTH_SERVER: 'true',
    },
    `http://127.0.0.1:${port}/healthz`,
  );
  try {
    await sleep(IDLE_SECONDS * 1000);
    const idle = rssMb(child.pid);
    let peak = NaN;
    let rps = NaN;
    if (roles.startsWith('api')) {
      peak = idle;
      const sampler = setInterval(() => (peak = Math.max(peak, rssMb(child.pid))), 200);
      const result = await autocannon({
        url: `http://127.0.0.1:${port}/api/messages?limit=50`,
        headers: { authorization: `Bearer ${token}` },
        connections: 16,
        duration: LOAD_SECONDS,
      });
      clearInterval(sampler);
      rps = result.requests.average;
    }
    return { idle, peak, rps };
  } finally {
    await stopProcess(child);
  }
}

async function main(): Promise<void> {
  const db = await scratchDatabase('mbx_mem');
  const env = {
    DATABASE_URL: db.url,
    MAILBOX_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'mbx-mem-')),
    MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
  };
  const [box] = await seedMailboxes(env, 'mem.test', ['load']);
  await seedMessages(db.url, box!.mailboxId, 'load@mem.test', 10_000);

  const flags = shippedNodeFlags(readFileSync(path.resolve('package.json'), 'utf8'));
  const builds: Build[] = [
    { name: `this build, ${flags.join(' ') || 'no flags'}`, args: [...flags, ...script('src/cli')] },
    { name: 'this build, default V8 flags', args: script('src/cli') },
  ];
  // BENCH_MEMORY_TRY_FLAGS="--max-semi-space-size=16;--max-semi-space-size=4": more flag sets to compare.
  for (const set of (process.env.BENCH_MEMORY_TRY_FLAGS ?? '').split(';').filter(Boolean))
    builds.push({ name: `this build, ${set}`, args: [...set.split(/\s+/), ...script('src/cli')] });
  const before = process.env.BENCH_MEMORY_BEFORE;
  if (before) builds.push({ name: `before (${before})`, args: [path.join(path.resolve(before), 'src/cli.js')] });

  const floor = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await sleep(2000);
  const bare = rssMb(floor.pid);
  floor.kill('SIGKILL');

  const figures = new Map<string, Figures>();
  const key = (build: Build, roles: string) => `${build.name}|${roles}`;
  // Roles outside, builds inside: the builds of one role are measured minutes apart at most.
  for (const roles of ROLES)
    for (const build of builds) figures.set(key(build, roles), await measureRole(build, roles, env, box!.token));

  const rows: Array<Record<string, string | number>> = [
    { process: 'bare node (floor)', build: '', 'idle RSS MB': bare.toFixed(0), 'under load MB': '', 'list req/s': '' },
  ];
  for (const roles of ROLES)
    for (const build of builds) {
      const f = figures.get(key(build, roles))!;
      rows.push({
        process: roles.includes(',') ? 'all roles in one process' : `serve --roles ${roles}`,
        build: build.name,
        'idle RSS MB': f.idle.toFixed(0),
        'under load MB': Number.isNaN(f.peak) ? '' : `${f.peak.toFixed(0)} (peak)`,
        'list req/s': Number.isNaN(f.rps) ? '' : f.rps.toFixed(0),
      });
    }
  console.log(
    `\nbench/memory — PostgreSQL, idle ${IDLE_SECONDS} s after start, list load ${LOAD_SECONDS} s ` +
      `(16 connections), node ${process.version}\n`,
  );
  console.log(table(rows));

  const ours = builds[0]!;
  const ratios: RatioRow[] = [];
  for (const roles of ROLES) {
    const f = figures.get(key(ours, roles))!;
    const work = `idle RSS, ${roles.includes(',') ? 'all roles' : `--roles ${roles}`}`;
    ratios.push(
      {
        work,
        ours: Math.round(f.idle),
        baseline: PEER_IDLE_MB,
        baselineName: 'openagentemail idle (its stated ~190 MB, not measured here)',
        unit: 'MB',
        goal: null,
        higherIsBetter: false,
      },
      {
        work,
        ours: Math.round(f.idle),
        baseline: Math.round(bare),
        baselineName: 'bare node process (same run)',
        unit: 'MB',
        goal: null,
        higherIsBetter: false,
      },
    );
  }
  writeRatios('memory', ratios);
  await db.drop();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
