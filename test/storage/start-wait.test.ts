import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { createPinoLogger } from '../../src/logging/pino-logger.js';
import { createScratchDatabase, ENGINE } from '../support/harness.js';
import { freePort } from '../support/processes.js';

// A process that starts before its database (a pod scheduled before PostgreSQL, or during its
// restart) waits for it, retrying and logging, up to DATABASE_START_WAIT, instead of exiting and
// crash-looping; past that it fails with the connection error. Real PostgreSQL behind a TCP relay
// that opens late.

const relay = (port: number) =>
  new Promise<net.Server>((resolve) => {
    const server = net.createServer((client) => {
      const upstream = net.connect(5432, '127.0.0.1');
      client.pipe(upstream).pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close);
      upstream.on('error', close);
    });
    server.listen(port, '127.0.0.1', () => resolve(server));
  });

describe.skipIf(ENGINE !== 'postgres')('start with the database unreachable', () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let dataDir: string;
  beforeAll(async () => {
    scratch = await createScratchDatabase();
    dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-start-wait-'));
  });
  afterAll(async () => {
    await scratch?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const configFor = (port: number, wait: string) =>
    loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      MAILBOX_DATA_DIR: dataDir,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      DATABASE_URL: scratch.url.replace(/127\.0\.0\.1:5432/, `127.0.0.1:${port}`),
      DATABASE_START_WAIT: wait,
    });

  it('waits, logging each try, and starts once the database answers', async () => {
    const port = await freePort();
    const lines: string[] = [];
    const log = createPinoLogger('warn', { onLine: (line) => lines.push(line) });
    const t0 = Date.now();
    const starting = startRuntime(configFor(port, '60s'), { roles: ['api'], log });
    await new Promise((r) => setTimeout(r, 2_500));
    const server = await relay(port);
    const runtime = await starting;
    try {
      expect(Date.now() - t0).toBeGreaterThanOrEqual(2_500);
      const waits = lines.map((l) => JSON.parse(l)).filter((l) => l.event === 'storage.waiting');
      expect(waits.length).toBeGreaterThanOrEqual(2);
      expect(waits[0].message).toMatch(/ECONNREFUSED|connect/);
      const res = await fetch(`http://127.0.0.1:${runtime.httpPort}/readyz`);
      expect(res.status).toBe(200);
    } finally {
      await runtime.close();
      server.close();
    }
  }, 60_000);

  it('gives up after DATABASE_START_WAIT with the connection error', async () => {
    const port = await freePort();
    const t0 = Date.now();
    await expect(startRuntime(configFor(port, '2s'), { roles: ['api'] })).rejects.toThrow(/ECONNREFUSED|connect/);
    expect(Date.now() - t0).toBeLessThan(20_000);
  }, 30_000);
});
