import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, createScratchDatabase } from '../support/harness.js';

// A process loads the channels its roles serve and no other (src/runtime/runtime.ts
// imports each one when a role needs it). Each case starts `mailbox serve --roles …` with a loader
// hook that records every module it loads (test/support/module-trace.ts), waits for the start-up
// banner, stops it and looks at the list.
const ROOT = path.resolve(import.meta.dirname, '../..');
let workDir: string;
let drop: (() => Promise<void>) | undefined;
let databaseEnv: Record<string, string> = {};

const CHANNEL_PACKAGES = {
  koa: '/node_modules/koa/',
  mcp: '/node_modules/@modelcontextprotocol/sdk/',
  socketIo: '/node_modules/socket.io/',
  smtpServer: '/node_modules/smtp-server/',
} as const;
const MAILAUTH = '/node_modules/mailauth/';
const CHANNEL_SOURCES = {
  http: '/src/channels/http/',
  mcp: '/src/channels/mcp/',
  realtime: '/src/channels/realtime/',
  smtp: '/src/channels/smtp/',
} as const;

async function modulesOf(roles: string, env: Record<string, string> = {}): Promise<string[]> {
  const traceFile = path.join(workDir, `${roles}-${Object.keys(env).join('-')}.txt`);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', './test/support/module-trace.ts', 'src/cli.ts', 'serve', '--roles', roles],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        LOG_LEVEL: 'error',
        HOST: '127.0.0.1',
        PORT: '0',
        SMTP_SUBMISSION_PORT: '0',
        SMTP_MX_PORT: '0',
        MAILBOX_DATA_DIR: mkdtempSync(path.join(workDir, 'data-')),
        MAILBOX_BANNER: 'true',
        MODULE_TRACE_FILE: traceFile,
        ...databaseEnv,
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // The banner is written once startRuntime has returned: every channel of the roles is up.
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('mailbox-service is running')) resolve();
    });
    void exited.then((code) => reject(new Error(`serve --roles ${roles} exited ${code}: ${stderr.slice(-2000)}`)));
  });
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  return readFileSync(traceFile, 'utf8').split('\n').filter(Boolean);
}

const loads = (modules: string[], part: string) => modules.some((url) => url.includes(part));

beforeAll(async () => {
  workDir = mkdtempSync(path.join(tmpdir(), 'mbx-roles-'));
  const db = ENGINE === 'postgres' ? await createScratchDatabase() : null;
  drop = db?.drop;
  databaseEnv = db ? { DATABASE_URL: db.url } : {};
});
afterAll(async () => {
  await drop?.();
  rmSync(workDir, { recursive: true, force: true });
});

// Each case starts a process under tsx: more than the default 30 s on a loaded machine.
describe('a role loads only the channels it serves', { timeout: 120_000 }, () => {
  it('worker: no channel at all, and no protocol library', async () => {
    const modules = await modulesOf('worker');
    expect(loads(modules, '/src/core/flows/outbound/outbox-worker.ts')).toBe(true);
    // Loaded before the first delivery or signature: its evaluation would stall the loop then.
    expect(loads(modules, MAILAUTH)).toBe(true);
    for (const part of [...Object.values(CHANNEL_PACKAGES), ...Object.values(CHANNEL_SOURCES)])
      expect(loads(modules, part), part).toBe(false);
  });

  it('worker with HEALTH_SERVER: the HTTP channel for its probes, no MCP, Socket.IO or SMTP', async () => {
    const modules = await modulesOf('worker', { HEALTH_SERVER: 'true' });
    expect(loads(modules, CHANNEL_PACKAGES.koa)).toBe(true);
    for (const part of [
      CHANNEL_PACKAGES.mcp,
      CHANNEL_PACKAGES.socketIo,
      CHANNEL_PACKAGES.smtpServer,
      CHANNEL_SOURCES.mcp,
      CHANNEL_SOURCES.realtime,
      CHANNEL_SOURCES.smtp,
    ])
      expect(loads(modules, part), part).toBe(false);
  });

  it('smtp: smtp-server, no Koa, MCP or Socket.IO', async () => {
    const modules = await modulesOf('smtp');
    expect(loads(modules, CHANNEL_PACKAGES.smtpServer)).toBe(true);
    expect(loads(modules, MAILAUTH)).toBe(true);
    for (const part of [
      CHANNEL_PACKAGES.koa,
      CHANNEL_PACKAGES.mcp,
      CHANNEL_PACKAGES.socketIo,
      CHANNEL_SOURCES.http,
      CHANNEL_SOURCES.mcp,
      CHANNEL_SOURCES.realtime,
    ])
      expect(loads(modules, part), part).toBe(false);
  });

  it('api: Koa and MCP, no smtp-server or Socket.IO', async () => {
    const modules = await modulesOf('api');
    expect(loads(modules, CHANNEL_PACKAGES.koa)).toBe(true);
    expect(loads(modules, CHANNEL_PACKAGES.mcp)).toBe(true);
    for (const part of [
      CHANNEL_PACKAGES.smtpServer,
      CHANNEL_PACKAGES.socketIo,
      CHANNEL_SOURCES.smtp,
      CHANNEL_SOURCES.realtime,
      // Only the roles that verify or sign load it (mailauth-module.ts).
      MAILAUTH,
    ])
      expect(loads(modules, part), part).toBe(false);
  });

  it('realtime: Socket.IO on the health server, no MCP or smtp-server', async () => {
    const modules = await modulesOf('realtime');
    expect(loads(modules, CHANNEL_PACKAGES.socketIo)).toBe(true);
    for (const part of [
      CHANNEL_PACKAGES.mcp,
      CHANNEL_PACKAGES.smtpServer,
      CHANNEL_SOURCES.mcp,
      CHANNEL_SOURCES.smtp,
      MAILAUTH,
    ])
      expect(loads(modules, part), part).toBe(false);
  });
});
