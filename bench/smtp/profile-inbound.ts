import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { Session } from 'node:inspector/promises';
import { createRequire } from 'node:module';
import pg from 'pg';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { InboundQueue } from '../../src/core/flows/inbound/inbound-queue.js';
import { benchQueueWorker } from './deferred-work.js';
import { SearchIndex } from '../../src/core/state/search/search-index.store.js';
import { ReplyTextBackfill } from '../../src/core/state/extraction/reply-text-backfill.js';
import { scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { startDnsStub } from '../lib/dns-stub.js';
import { cpuMeter } from './cpu.js';
import { SENDER_RECORDS, tenKbMessage } from './load.js';

// bench/smtp/profile-inbound: port 25's queue filled with BENCH_PROFILE_MESSAGES of bench/smtp's
// 10 KB messages (through InboundService.accept, as intake does), then drained by the worker's
// code in this process, as deferred-work.ts does: the worker's and PostgreSQL's CPU per message,
// the statements per message (Execute and simple Query messages the pg client sends), and with
// BENCH_CPU_PROF_DIR a V8 CPU profile of the drain alone. The DNS stub runs in a child process,
// so its CPU is not the worker's.
const MESSAGES = Number(process.env.BENCH_PROFILE_MESSAGES ?? 6000);
const MAILBOXES = Number(process.env.BENCH_PROFILE_MAILBOXES ?? 8);

/** Counts the statements every pg connection of this process sends (extended and simple protocol). */
function countStatements(): () => { statements: number; roundTrips: number } {
  type Proto = Record<string, (...a: unknown[]) => unknown>;
  type Pg = { Connection: { prototype: Proto }; Client: { prototype: Proto } };
  // MikroORM's driver may bring a pg of its own: count on every copy.
  const require = createRequire(import.meta.url);
  const copies = new Set<Pg>([pg as unknown as Pg]);
  try {
    copies.add(createRequire(require.resolve('@mikro-orm/postgresql'))('pg') as Pg);
  } catch {
    // the same pg as ours
  }
  const n = { statements: 0, roundTrips: 0 };
  const count = (proto: Proto, name: string, key: keyof typeof n) => {
    const original = proto[name]!;
    proto[name] = function (this: unknown, ...args: unknown[]) {
      n[key]++;
      return original.apply(this, args);
    };
  };
  for (const copy of copies) {
    count(copy.Connection.prototype, 'execute', 'statements');
    count(copy.Connection.prototype, 'query', 'statements');
    // A client's query is one round trip (a pipelined batch is one query: statement-pipeline.ts).
    count(copy.Client.prototype, 'query', 'roundTrips');
  }
  return () => ({ ...n });
}

async function main(): Promise<void> {
  const statements = countStatements();
  const db = await scratchDatabase('mbx_prof');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-prof-smtp-'));
  const dns = await startDnsStubProcess();
  try {
    const env = {
      DATABASE_URL: db.url,
      MAILBOX_DATA_DIR: dataDir,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      SMTP_HOSTNAME: 'mail.bench.test',
      DNS_SERVERS: dns.server,
      LOG_LEVEL: 'error',
      DATABASE_POOL_MAX: '10',
    };
    const boxes = await seedMailboxes(
      env,
      'bench.test',
      Array.from({ length: MAILBOXES }, (_, i) => `agent${i}`),
    );
    const runtime = await startRuntime(loadConfig(env), { roles: [], log: silentLogger });
    try {
      const s = runtime.services;
      const inbound = s.transport.inbound;
      for (let i = 0; i < MESSAGES; i += 16)
        await Promise.all(
          Array.from({ length: Math.min(16, MESSAGES - i) }, async (_, j) => {
            const box = boxes[(i + j) % boxes.length]!;
            const recipient = await inbound.checkRecipient(box.address, 0);
            const raw = tenKbMessage('news@sender.bench', box.address);
            const accepted = await inbound.accept(
              {
                mailFrom: 'news@sender.bench',
                recipients: [recipient],
                clientAddress: '127.0.0.1',
                helo: 'bench.client',
                tls: false,
              },
              Readable.from([raw]),
            );
            if (!accepted.queued) throw new Error('not queued');
          }),
        );
      const worker = benchQueueWorker(s, new InboundQueue(s.db, inbound, silentLogger));
      const profDir = process.env.BENCH_CPU_PROF_DIR;
      const session = profDir ? new Session() : null;
      if (session) {
        session.connect();
        await session.post('Profiler.enable');
        await session.post('Profiler.start');
      }
      const database = db.url.slice(db.url.lastIndexOf('/') + 1);
      const meter = cpuMeter(process.pid, database);
      const s0 = statements();
      const usage0 = process.cpuUsage();
      const t0 = performance.now();
      let messages = 0;
      messages = await worker.drain();
      const seconds = (performance.now() - t0) / 1000;
      const cpu = meter();
      // User and system apart: a profile's writev is mostly time descheduled, which /proc does not count.
      const usage = process.cpuUsage(usage0);
      const s1 = statements();
      if (session) {
        const { profile } = await session.post('Profiler.stop');
        mkdirSync(profDir!, { recursive: true });
        const file = path.join(profDir!, `inbound-drain-${Date.now()}.cpuprofile`);
        writeFileSync(file, JSON.stringify(profile));
        console.log(`profile: ${file}`);
      }
      // The passes behind the delivery, one after the other on what it stored, as the worker runs them.
      const passes: string[] = [];
      for (const [name, step] of [
        ['search indexing', () => new SearchIndex(s.db).indexSome()],
        ['reply text', () => new ReplyTextBackfill(s.db).fillSome()],
      ] as const) {
        const passMeter = cpuMeter(process.pid, database);
        const passT0 = performance.now();
        let n = 0;
        for (let k = await step(); k > 0; k = await step()) n += k;
        const passCpu = passMeter();
        const each = (x: number) => (x / Math.max(1, n)).toFixed(2);
        passes.push(
          `${name}: ${n} at ${Math.round(n / ((performance.now() - passT0) / 1000))} msg/s, worker CPU ${each(passCpu.server)} + PostgreSQL ${each(passCpu.postgres)} ms/msg`,
        );
      }
      const stored = await s.db.rows<{ n: string }>(
        (await import('../../src/storage/database.js')).sql`select count(*)::text as n from message`,
      );
      const per = (x: number) => (x / Math.max(1, messages)).toFixed(2);
      console.log(
        `inbound drain: ${messages} messages (${stored[0]!.n} stored) at ${Math.round(messages / seconds)} msg/s, worker CPU ${per(cpu.server)} ms/msg, PostgreSQL CPU ${per(cpu.postgres)} ms/msg, ${per(s1.statements - s0.statements)} statements and ${per(s1.roundTrips - s0.roundTrips)} round trips/msg (worker user ${per(usage.user / 1000)} + system ${per(usage.system / 1000)} ms/msg)`,
      );
      for (const line of passes) console.log(line);
    } finally {
      await runtime.close();
    }
  } finally {
    await dns.close();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** bench/smtp's DNS stub records, served from a child process (its CPU is not the worker's). */
async function startDnsStubProcess(): Promise<{ server: string; close(): Promise<void> }> {
  if (process.env.BENCH_DNS_CHILD) {
    const dns = await startDnsStub(SENDER_RECORDS);
    process.send!(dns.server);
    return dns;
  }
  const { fork } = await import('node:child_process');
  const child = fork(new URL(import.meta.url).pathname, [], {
    env: { ...process.env, BENCH_DNS_CHILD: '1', BENCH_CPU_PROF_DIR: '' },
    execArgv: process.execArgv.filter((a) => !a.startsWith('--cpu-prof')),
  });
  const server = await new Promise<string>((resolve) => child.once('message', (m) => resolve(String(m))));
  return {
    server,
    close: async () => {
      child.kill();
    },
  };
}

if (process.env.BENCH_DNS_CHILD) void startDnsStubProcess();
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
