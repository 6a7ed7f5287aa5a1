import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE } from '../support/harness.js';
import { mailboxArgs } from '../support/mailbox-command.js';
import { serveProcess, type ServeProcess } from '../support/processes.js';

// docs/api.md, "Embedded storage lock": with `mailbox serve` running on a PGlite data directory and
// no admin socket to hand commands to (a server from before the hand-off: its socket removed here),
// `mailbox migrate` and `mailbox apply -f` on the same directory fail at once with one line naming
// the serving process; apply points at MAILBOX_RESOURCES_DIR. PGlite only (that is the lock's subject).
// With the socket, the server runs them: test/cli/admin-handoff.test.ts.

const ROOT = path.resolve(import.meta.dirname, '../..');
const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-lock-cli-'));
const resourcesDir = path.join(dataDir, 'resources');
let serve: ServeProcess;

function cli(args: string[]): Promise<{ code: number | null; stderr: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...mailboxArgs(), ...args], {
      cwd: ROOT,
      env: { ...process.env, MAILBOX_DATA_DIR: dataDir, LOG_LEVEL: 'error', DATABASE_URL: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', (code) => resolve({ code, stderr, ms: performance.now() - t0 }));
  });
}

beforeAll(async () => {
  if (ENGINE !== 'pglite') return;
  mkdirSync(resourcesDir, { recursive: true });
  serve = await serveProcess(
    { MAILBOX_DATA_DIR: dataDir, MAILBOX_RESOURCES_DIR: resourcesDir, DATABASE_URL: '' },
    'api',
  );
  await serve.start();
  // The server keeps listening on the unlinked socket; no other process can reach it.
  rmSync(path.join(dataDir, 'admin.sock'));
}, 120_000);
afterAll(async () => {
  await serve?.stop();
});

describe.runIf(ENGINE === 'pglite')('a second process on the embedded data directory', () => {
  it('without its socket, `migrate` and `apply -f` fail with one line naming the server; apply points at MAILBOX_RESOURCES_DIR', async () => {
    const manifest = path.join(dataDir, 'domain.yaml');
    writeFileSync(
      manifest,
      'apiVersion: mailbox-service.dev/v1alpha1\nkind: Domain\nmetadata: { name: locked-test }\nspec: { domain: locked.test }\n',
    );
    const migrate = await cli(['migrate']);
    expect(migrate.code).toBe(1);
    expect(migrate.stderr.trim().split('\n')).toHaveLength(1);
    expect(migrate.stderr).toMatch(
      /^mailbox: the embedded database .*pglite is in use by pid \d+ \(mailbox serve, since /,
    );
    const apply = await cli(['apply', '-f', manifest]);
    expect(apply.code).toBe(1);
    expect(apply.stderr.trim().split('\n')).toHaveLength(1);
    expect(apply.stderr).toContain(`drop the file into MAILBOX_RESOURCES_DIR (${resourcesDir}) instead`);
    // The server is unharmed.
    expect((await fetch(`${serve.url}/readyz`)).status).toBe(200);
  });
});
