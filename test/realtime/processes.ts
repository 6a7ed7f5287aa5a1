import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

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

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`${what}: exited with ${child.exitCode}`);
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`${what}: not ready after ${timeoutMs} ms`);
}

export interface PrivateRedis { url: string; start(): Promise<void>; kill(): Promise<void> }

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const ping = async () => {
    const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
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
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      await until(`redis-server :${port}`, ping, 10_000, child);
    },
    async kill() {
      if (!child || child.exitCode !== null) return;
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
  await self.start();
  return self;
}

export interface ServeProcess { url: string; port: number; start(): Promise<void>; stop(): Promise<void> }

/** `mailbox serve --roles …` under tsx, on a port chosen here. */
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
      // `node --import tsx`, not the tsx wrapper: one process, so signals reach the server itself.
      child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--roles', roles], {
        cwd: ROOT,
        env: { ...process.env, LOG_LEVEL: process.env.MBX_TEST_CHILD_LOG ?? 'error', HOST: '127.0.0.1', PORT: String(port), MAILBOX_DATA_DIR: dataDir, ...env },
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
  };
}
