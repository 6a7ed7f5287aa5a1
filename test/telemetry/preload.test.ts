import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// src/telemetry/preload.ts as `npm start` uses it (`node --import …preload.js`), in a plain node
// process (TypeScript through tsx): with OTEL exporting on, pg, koa (ESM entry), ioredis and
// http are patched before the application imports them; with it off, nothing is.

const root = path.resolve(import.meta.dirname, '../..');
const probe = `
  import Koa from 'koa';
  import pg from 'pg';
  import { Redis } from 'ioredis';
  import http from 'node:http';
  const wrapped = (f) => Boolean(f && (f.__wrapped || String(f).includes('patched') || String(f).includes('Instrumentation')));
  console.log(JSON.stringify({ koa: wrapped(Koa.prototype.use), pg: wrapped(pg.Client.prototype.query), ioredis: wrapped(Redis.prototype.sendCommand), http: wrapped(http.Server.prototype.emit) }));
`;

async function run(env: Record<string, string>): Promise<Record<string, boolean>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--import', './src/telemetry/preload.ts', '--input-type=module', '-e', probe],
    {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', ...env },
      timeout: 60_000,
    },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

// Storage-free: once is enough (the engine projects would run it twice).
describe.skipIf(process.env.MAILBOX_TEST_ENGINE === 'pglite')('telemetry preload', () => {
  it('instruments koa, pg, ioredis and http when spans are exported', async () => {
    expect(await run({ OTEL_TRACES_EXPORTER: 'console' })).toEqual({ koa: true, pg: true, ioredis: true, http: true });
  });

  it('leaves every library alone when nothing is exported', async () => {
    expect(await run({})).toEqual({ koa: false, pg: false, ioredis: false, http: false });
  });
});
