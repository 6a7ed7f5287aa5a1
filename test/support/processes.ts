import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { asPod, type Pod } from './as-pod.js';
import { mailboxArgs } from './mailbox-command.js';

// Real processes for the multi-replica tests: `mailbox serve` children and a private
// redis-server (restarting it disturbs nobody else's tests).

const ROOT = path.resolve(import.meta.dirname, '../..');

/** A port that was free a moment ago (the children need it before they start). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  child?: ChildProcess,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`${what}: exited with ${child.exitCode}`);
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`${what}: not ready after ${timeoutMs} ms`);
}

export interface PrivateRedis {
  url: string;
  start(): Promise<void>;
  kill(): Promise<void>;
}

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const ping = async () => {
    const r = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    r.on('error', () => undefined);
    try {
      await r.connect();
      return (await r.ping()) === 'PONG';
    } finally {
      r.disconnect();
    }
  };
  const self: PrivateRedis = {
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { stdio: 'ignore' },
      );
      await until(`redis-server :${port}`, ping, 10_000, child);
    },
    async kill() {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
  await self.start();
  return self;
}

export interface ServeProcess {
  url: string;
  port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGKILL: no close runs, whatever the process made stays behind (start() again reuses port and dirs). */
  kill(): Promise<void>;
}

/** `mailbox serve --roles …` (the build, else tsx: mailbox-command.ts), on a port chosen here. */
export async function serveProcess(env: Record<string, string>, roles = 'api,realtime,worker'): Promise<ServeProcess> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-proc-'));
  let child: ChildProcess | null = null;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    async start() {
      mkdirSync(dataDir, { recursive: true });
      // `node …`, not a wrapper: one process, so signals reach the server itself.
      child = spawn(process.execPath, [...mailboxArgs(), 'serve', '--roles', roles], {
        cwd: ROOT,
        env: {
          ...process.env,
          LOG_LEVEL: process.env.MBX_TEST_CHILD_LOG ?? 'error',
          HOST: '127.0.0.1',
          PORT: String(port),
          MAILBOX_DATA_DIR: dataDir,
          ...env,
        },
        stdio: ['ignore', process.env.MBX_TEST_CHILD_LOG ? 'inherit' : 'ignore', 'inherit'],
      });
      await until(`serve :${port}`, async () => (await fetch(`${url}/healthz`)).ok, 60_000, child);
    },
    async stop() {
      if (!child || child.exitCode !== null) return;
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        throw new Error(`serve :${port} did not stop within 10 s of SIGTERM`);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
    async kill() {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Reliability harness pieces: a private PostgreSQL cluster (stopping it disturbs no other test),
// service processes on fixed ports that can be killed and restarted, and a supervisor.

const PG_BIN = process.env.MBX_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PrivatePostgres {
  /** Admin URL (database postgres). */
  adminUrl: string;
  port: number;
  dataDir: string;
  /** Creates a database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  start(): Promise<void>;
  /** `pg_ctl stop -m immediate`: no checkpoint, no flush of WAL buffers (a crash, for PostgreSQL). */
  stopImmediate(): Promise<void>;
  stop(): Promise<void>;
  /** Stops and removes the cluster. */
  destroy(): Promise<void>;
}

function run(cmd: string, args: string[], opts: { asPostgres?: boolean } = {}): Promise<string> {
  const [file, argv] =
    opts.asPostgres && process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv as string[], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${out.slice(-2000)}`)),
    );
  });
}

/**
 * A throwaway PostgreSQL 15 cluster on its own port, run as the postgres user when we are root
 * (initdb refuses root). `settings` go to postgresql.conf, e.g. `{ synchronous_commit: 'off' }`
 * for the negative control of the durability harness.
 */
export async function privatePostgres(settings: Record<string, string> = {}): Promise<PrivatePostgres> {
  const port = await freePort();
  const root = mkdtempSync(path.join(tmpdir(), 'mbx-pg-'));
  const dataDir = path.join(root, 'data');
  if (process.getuid?.() === 0) await run('chown', ['postgres', root]);
  await run(`${PG_BIN}/initdb`, ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync'], { asPostgres: true });
  const conf = {
    listen_addresses: "'127.0.0.1'",
    port: String(port),
    unix_socket_directories: `'${root}'`,
    max_connections: '200',
    fsync: 'on',
    ...settings,
  };
  const { appendFileSync } = await import('node:fs');
  appendFileSync(
    path.join(dataDir, 'postgresql.conf'),
    Object.entries(conf)
      .map(([k, v]) => `${k} = ${v}\n`)
      .join(''),
  );
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const pgCtl = (...args: string[]) => run(`${PG_BIN}/pg_ctl`, ['-D', dataDir, ...args], { asPostgres: true });
  const self: PrivatePostgres = {
    adminUrl,
    port,
    dataDir,
    async createDatabase(name) {
      const { default: pg } = await import('pg');
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`create database ${name}`);
      await c.end();
      return adminUrl.replace(/\/postgres$/, `/${name}`);
    },
    async start() {
      await pgCtl('start', '-w', '-t', '60', '-l', path.join(root, 'server.log'));
    },
    async stopImmediate() {
      await pgCtl('stop', '-m', 'immediate', '-w');
    },
    async stop() {
      await pgCtl('stop', '-m', 'fast', '-w').catch(() => undefined);
    },
    async destroy() {
      await self.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
  await self.start();
  return self;
}

export interface ServiceProcess {
  /** http://127.0.0.1:<port> (API, MCP, Socket.IO) when the process has the api or realtime role. */
  url: string;
  ports: { http: number; submission: number; mx: number };
  pid(): number | null;
  running(): boolean;
  /** Starts and waits until /healthz answers (HEALTH_SERVER is on for every role). */
  start(): Promise<void>;
  /** Sends a signal; resolves with the exit code or signal once the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
  /** Every line the process wrote to stdout/stderr, across restarts (LOG_LEVEL as given). */
  logs(): string[];
  /** SIGTERM, then SIGKILL after 15 s; removes its data dir (and its memory cgroup). */
  stop(): Promise<void>;
  /** With `asPod`: what runs, and the memory group it runs in or why there is none. */
  pod?: Pod;
}

/**
 * `mailbox serve --roles …` (mailbox-command.ts), on ports fixed at creation so a restart comes back where
 * clients expect it. The environment is the test's; logs are kept in memory for inspection.
 */
/**
 * `asPod`: start it as a pod of the chart does, under that memory limit (support/as-pod.ts);
 * `pod` on the result says what ran and in which group.
 */
export interface ServiceOptions {
  asPod?: { memoryLimitMb: number };
}

export async function serviceProcess(
  env: Record<string, string>,
  roles: string,
  options: ServiceOptions = {},
): Promise<ServiceProcess> {
  const ports = { http: await freePort(), submission: await freePort(), mx: await freePort() };
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-svc-'));
  const lines: string[] = [];
  let child: ChildProcess | null = null;
  const url = `http://127.0.0.1:${ports.http}`;
  const collect = (stream: NodeJS.ReadableStream | null) => {
    let rest = '';
    stream?.on('data', (c: Buffer) => {
      const parts = (rest + c.toString('utf8')).split('\n');
      rest = parts.pop() ?? '';
      lines.push(...parts);
    });
  };
  const self: ServiceProcess = {
    url,
    ports,
    pid: () => child?.pid ?? null,
    running: () => child !== null && child.exitCode === null && child.signalCode === null,
    async start() {
      if (options.asPod && !self.pod) self.pod = asPod(ROOT, roles, options.asPod.memoryLimitMb);
      const [command, ...args] = self.pod?.argv ?? [process.execPath, ...mailboxArgs(), 'serve', '--roles', roles];
      child = spawn(command!, args, {
        cwd: ROOT,
        env: {
          ...process.env,
          LOG_LEVEL: 'info',
          HOST: '127.0.0.1',
          HEALTH_SERVER: 'true',
          MAILBOX_DATA_DIR: dataDir,
          PORT: String(ports.http),
          SMTP_SUBMISSION_PORT: String(ports.submission),
          SMTP_MX_PORT: String(ports.mx),
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      collect(child.stdout);
      collect(child.stderr);
      await until(`serve ${roles} :${ports.http}`, async () => (await fetch(`${url}/healthz`)).ok, 90_000, child);
    },
    async kill(signal = 'SIGKILL') {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null)
        return { code: c?.exitCode ?? null, signal: c?.signalCode ?? null, ms: 0 };
      const t0 = Date.now();
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
        c.once('exit', (code, sig) => r({ code, signal: sig })),
      );
      c.kill(signal);
      const result = await exited;
      return { ...result, ms: Date.now() - t0 };
    },
    logs: () => lines,
    async stop() {
      if (child && child.exitCode === null && child.signalCode === null) {
        const c = child;
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGTERM');
        await Promise.race([exited, sleep(15_000)]);
        if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      }
      rmSync(dataDir, { recursive: true, force: true });
      if (self.pod && typeof self.pod.cgroup !== 'string') self.pod.cgroup.remove();
    },
  };
  return self;
}

/**
 * Restarts a process the test killed, like Kubernetes restarts a crashed container: `crash()`
 * sends SIGKILL and starts it again, counting restarts and the time the service was down.
 */
export class Supervisor {
  restarts = 0;
  downMs = 0;
  constructor(readonly proc: ServiceProcess) {}

  /** SIGKILL, then a replacement; `onDead` runs between the exit and the spawn. */
  async crash(onDead?: () => void): Promise<void> {
    const t0 = Date.now();
    await this.proc.kill('SIGKILL');
    onDead?.();
    await this.proc.start();
    this.restarts++;
    this.downMs += Date.now() - t0;
  }
}

/** Migrates a database and mints a domain with an every-scope domain token, through the core. */
export async function seedDomain(
  env: Record<string, string>,
  name = `rel-${Math.random().toString(36).slice(2, 8)}.test`,
): Promise<{ name: string; domainId: string; token: string }> {
  const { loadConfig } = await import('../../src/config/config.js');
  const { startRuntime } = await import('../../src/runtime/runtime.js');
  const { silentLogger } = await import('../../src/core/base/logger.js');
  const { upsertDomain } = await import('../../src/core/state/domains/domain.store.js');
  const { DOMAIN_TOKEN_SCOPES } = await import('../../src/core/access/scopes.js');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-seed-'));
  const seed = await startRuntime(loadConfig({ ...env, MAILBOX_DATA_DIR: dataDir }), { roles: [], log: silentLogger });
  try {
    return await seed.services.db.tx(async (trx) => {
      const domainId = await upsertDomain(trx, { name, sendRateLimitPerMinute: 1_000_000 });
      const t = await seed.services.tokenMinter.mint(trx, {
        kind: 'domain',
        domainId,
        mailboxId: null,
        name: 'reliability',
        scopes: DOMAIN_TOKEN_SCOPES,
        expiresAt: new Date(Date.now() + 86_400_000),
        createdSource: 'resource',
        parentTokenId: null,
      });
      return { name, domainId, token: t.accessToken };
    });
  } finally {
    await seed.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Pids of the text extractors (docs/attachment-extraction.md) `pid` has forked and that still run. */
export function extractorPids(pid: number = process.pid): number[] {
  const read = (file: string): string | null => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return null; // the process or thread ended meanwhile
    }
  };
  const tasks = (() => {
    try {
      return readdirSync(`/proc/${pid}/task`);
    } catch {
      return [];
    }
  })();
  return tasks
    .flatMap((task) => (read(`/proc/${pid}/task/${task}/children`) ?? '').trim().split(/\s+/).filter(Boolean))
    .map(Number)
    .filter((child) => read(`/proc/${child}/cmdline`)?.includes('text-extractor'));
}
