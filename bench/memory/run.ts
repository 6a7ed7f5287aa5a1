import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { table } from '../lib/measure.js';
import { rssMb } from '../lib/proc.js';
import { freePort, serve, stopProcess } from '../lib/processes.js';
import { scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { seedMessages } from '../http/seed.js';

// bench/memory (issue 15): resident memory of each role alone, idle after start, and of the api
// role and the all-in-one process under the list load of bench/http (16 connections), on
// PostgreSQL. A bare `node -e` process is measured in the same run as the floor of any Node service.
const IDLE_SECONDS = Number(process.env.BENCH_MEMORY_IDLE_SECONDS ?? 10);
const LOAD_SECONDS = Number(process.env.BENCH_MEMORY_LOAD_SECONDS ?? 10);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  const rows: Array<Record<string, string | number>> = [];

  const floor = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await sleep(2000);
  rows.push({ process: 'bare node (floor)', 'idle RSS MB': rssMb(floor.pid).toFixed(0), 'under load MB': '' });
  floor.kill('SIGKILL');

  for (const roles of ['api', 'realtime', 'smtp', 'worker', 'api,realtime,smtp,worker']) {
    const port = await freePort();
    const child = await serve(roles, port, {
      ...env,
      SMTP_SUBMISSION_PORT: String(await freePort()),
      SMTP_MX_PORT: String(await freePort()),
      // smtp and worker alone serve /healthz only when asked (as their Kubernetes probes do).
      HEALTH_SERVER: 'true',
    });
    try {
      await sleep(IDLE_SECONDS * 1000);
      const idle = rssMb(child.pid);
      let peak = NaN;
      if (roles.startsWith('api')) {
        peak = idle;
        const sampler = setInterval(() => (peak = Math.max(peak, rssMb(child.pid))), 200);
        await autocannon({
          url: `http://127.0.0.1:${port}/api/messages?limit=50`,
          headers: { authorization: `Bearer ${box!.token}` },
          connections: 16,
          duration: LOAD_SECONDS,
        });
        clearInterval(sampler);
      }
      rows.push({
        process: `mailbox serve --roles ${roles}`,
        'idle RSS MB': idle.toFixed(0),
        'under load MB': Number.isNaN(peak) ? '' : `${peak.toFixed(0)} (peak, list load)`,
      });
    } finally {
      await stopProcess(child);
    }
  }
  console.log(
    `\nbench/memory — PostgreSQL, idle ${IDLE_SECONDS} s after start, load ${LOAD_SECONDS} s, node ${process.version}\n`,
  );
  console.log(table(rows));
  await db.drop();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
