import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE } from '../support/harness.js';
import { mailboxArgs } from '../support/mailbox-command.js';
import { serveProcess, type ServeProcess } from '../support/processes.js';

// docs/api.md, "The mailbox command": with `mailbox serve` holding an embedded (PGlite) data
// directory, the admin commands, `apply -f` and `migrate` of a second `mailbox` process run in the
// server over <data dir>/admin.sock. Each is compared with the same command run in-process on a
// directory no server holds: same stdout shape, same errors, same exit codes. PGlite only (with
// DATABASE_URL every command opens the database itself).

const ROOT = path.resolve(import.meta.dirname, '../..');
const served = mkdtempSync(path.join(tmpdir(), 'mbx-handoff-'));
const alone = mkdtempSync(path.join(tmpdir(), 'mbx-handoff-alone-'));
const socket = path.join(served, 'admin.sock');
// No quick-start resources (make exports MAILBOX_RESOURCES_DIR=./resources): the server holds only
// what the commands here create, and the in-process runs see the same.
const NO_RESOURCES = { MAILBOX_RESOURCES_DIR: '' };
let serve: ServeProcess;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function mailbox(dataDir: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...mailboxArgs(), ...args], {
      cwd: ROOT,
      env: { ...process.env, MAILBOX_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn', ...NO_RESOURCES },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Both runs of one command line: handed to the server, and in-process on the directory no server holds. */
async function both(...args: string[]): Promise<{ handedOff: Run; inProcess: Run }> {
  const [handedOff, inProcess] = await Promise.all([mailbox(served, ...args), mailbox(alone, ...args)]);
  return { handedOff, inProcess };
}

/** A JSON value's shape: the keys of every object, the shapes of an array's items, a leaf's type. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, shape(v)]),
    );
  return value === null ? 'null' : typeof value;
}

async function api(pathname: string, token: string | null, init: RequestInit = {}) {
  const res = await fetch(`${serve.url}${pathname}`, {
    ...init,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
  });
  return { status: res.status, body: (await res.json()) as { data: unknown } };
}

/** One raw exchange on the admin socket: the bytes sent, the answer parsed. */
function exchange(bytes: string): Promise<{ exitCode: number; output?: unknown; error?: { message: string } }> {
  return new Promise((resolve, reject) => {
    const conn = net.createConnection(socket);
    let text = '';
    conn.on('connect', () => conn.write(bytes));
    conn.on('data', (c: Buffer) => (text += c.toString()));
    conn.on('error', reject);
    conn.on('end', () => resolve(JSON.parse(text)));
  });
}

beforeAll(async () => {
  if (ENGINE !== 'pglite') return;
  serve = await serveProcess({ MAILBOX_DATA_DIR: served, DATABASE_URL: '', ...NO_RESOURCES }, 'api');
  await serve.start();
}, 120_000);
afterAll(async () => {
  await serve?.stop();
  rmSync(served, { recursive: true, force: true });
  rmSync(alone, { recursive: true, force: true });
});

describe.runIf(ENGINE === 'pglite')('admin commands while `serve` holds the embedded database', () => {
  it("the socket is its owner's alone (0600)", () => {
    const stat = lstatSync(socket);
    expect(stat.isSocket()).toBe(true);
    expect(stat.mode & 0o777).toBe(0o600);
  });

  it(
    'domain, mailbox and token commands run in the server, show in its API at once, and print what they print in-process',
    { timeout: 300_000 },
    async () => {
      const domain = await both('domain', 'create', 'handoff.example');
      const created = await both(
        'mailbox',
        'create',
        'ops@handoff.example',
        '--display-name',
        'Ops',
        '--password',
        'ops-password-1',
      );
      const list = await both('mailbox', 'list', 'handoff.example');
      const token = await both('token', 'create', 'ops@handoff.example', '--name', 'ci', '--scopes', 'MailboxRead');
      const tokens = await both('token', 'list', 'ops@handoff.example');
      for (const [what, run] of Object.entries({ domain, created, list, token, tokens })) {
        expect(run.handedOff.code, `${what}: ${run.handedOff.stderr}`).toBe(0);
        expect(run.inProcess.code, `${what}: ${run.inProcess.stderr}`).toBe(0);
        expect(run.handedOff.stderr, what).toBe('');
        expect(run.handedOff.stdout.endsWith('}\n') || run.handedOff.stdout.endsWith(']\n'), what).toBe(true);
        expect(shape(JSON.parse(run.handedOff.stdout)), what).toEqual(shape(JSON.parse(run.inProcess.stdout)));
      }

      // The server's own API sees each effect.
      const domainToken = JSON.parse(domain.handedOff.stdout).accessToken as string;
      const mailboxes = await api('/api/domain/mailboxes', domainToken);
      expect(mailboxes.status).toBe(200);
      expect(JSON.stringify(mailboxes.body.data)).toContain('ops@handoff.example');
      expect(JSON.parse(list.handedOff.stdout)).toEqual([expect.objectContaining({ address: 'ops@handoff.example' })]);
      for (const t of [
        JSON.parse(created.handedOff.stdout).initialAccessToken,
        JSON.parse(token.handedOff.stdout).accessToken,
      ])
        expect((await api('/api/messages', t)).status).toBe(200);
      const login = await api('/api/mailbox/auth/login/password', null, {
        method: 'POST',
        body: JSON.stringify({ mailboxAddress: 'ops@handoff.example', password: 'ops-password-1' }),
      });
      expect(login.status).toBe(200);
      expect(
        JSON.parse(tokens.handedOff.stdout)
          .map((t: { tokenName: string }) => t.tokenName)
          .sort(),
      ).toEqual(['bootstrap', 'ci']);
    },
  );

  it('a bad argument fails as it does in-process: same message, same exit status', { timeout: 300_000 }, async () => {
    const cases = [
      ['mailbox', 'set-password', 'ops@handoff.example', '--password', 'short'],
      ['token', 'create', 'ops@handoff.example', '--expires-in', '-1'],
      ['token', 'create', 'ops@handoff.example', '--scopes', 'NoSuchScope'],
      ['mailbox', 'create', 'x@nowhere.example'],
    ];
    for (const args of cases) {
      const { handedOff, inProcess } = await both(...args);
      expect(inProcess.code, args.join(' ')).toBe(1);
      expect(handedOff.code, args.join(' ')).toBe(inProcess.code);
      expect(handedOff.stderr, args.join(' ')).toBe(inProcess.stderr);
      expect(handedOff.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(handedOff.stdout).toBe('');
    }
  });

  it(
    "`apply -f` applies in the server (a relative path is the caller's); `migrate` says the server migrated",
    { timeout: 300_000 },
    async () => {
      const manifest = path.join(served, 'handoff.yaml');
      writeFileSync(
        manifest,
        [
          'apiVersion: mailbox-service.dev/v1alpha1',
          'kind: Domain',
          'metadata: { name: applied }',
          'spec: { domain: applied.example }',
          '---',
          'apiVersion: mailbox-service.dev/v1alpha1',
          'kind: Mailbox',
          'metadata: { name: agent }',
          'spec: { address: agent@applied.example, tokenSecretName: agent-token }',
          '',
        ].join('\n'),
      );
      const { handedOff, inProcess } = await both('apply', '-f', path.relative(ROOT, manifest));
      expect(handedOff.code, handedOff.stderr).toBe(0);
      expect(handedOff.stdout).toBe(
        'Domain default/applied: created\nMailbox default/agent: created\n2 resources: 2 created, 0 updated, 0 unchanged, 0 failed\n',
      );
      // In-process on the other directory, the same manifest (read there from the same path) prints the same.
      expect(inProcess.stdout).toBe(handedOff.stdout);
      const written = JSON.parse(readFileSync(path.join(served, 'secrets', 'default', 'agent-token.json'), 'utf8'));
      expect((await api('/api/messages', written.accessToken as string)).status).toBe(200);

      const migrate = await mailbox(served, 'migrate');
      expect(migrate.code, migrate.stderr).toBe(0);
      expect(migrate.stdout).toMatch(
        /^no pending migrations: the running server \(mailbox serve, pid \d+\) applied them when it started\n$/,
      );
    },
  );

  it('an unknown command, a malformed request and one over the size bound get a clear error', async () => {
    const ask = (value: unknown) => exchange(JSON.stringify(value) + '\n');
    expect(await ask({ v: 1, command: 'frobnicate', args: [], options: {} })).toEqual({
      exitCode: 1,
      error: { message: "unknown command 'frobnicate'" },
    });
    expect((await exchange('not json\n')).error?.message).toBe('malformed request: not JSON');
    expect((await ask({ v: 2, command: 'token list', args: ['a@b.example'], options: {} })).error?.message).toMatch(
      /^malformed request: v: /,
    );
    expect((await ask({ v: 1, command: 'domain create', args: [], options: {} })).error?.message).toBe(
      'domain create: 1 argument(s) expected (<name>), got 0',
    );
    expect(
      (await ask({ v: 1, command: 'token list', args: ['a@b.example'], options: { admin: 'yes' } })).error?.message,
    ).toBe("token list: unknown option 'admin'");
    expect((await ask({ v: 1, command: 'apply', args: [], options: { file: 'relative.yaml' } })).error?.message).toBe(
      "apply: option '-f, --file <file|dir>' must be an absolute path",
    );
    const huge = await ask({ v: 1, command: 'domain create', args: ['x'.repeat(70_000)], options: {} });
    expect(huge).toEqual({ exitCode: 1, error: { message: 'request too large: more than 65536 bytes' } });
    // The server is unharmed.
    expect((await fetch(`${serve.url}/readyz`)).status).toBe(200);
  });

  it('the socket goes when the server stops', { timeout: 60_000 }, async () => {
    await serve.stop();
    expect(existsSync(socket)).toBe(false);
    expect(existsSync(path.join(served, 'pglite.lock'))).toBe(false);
  });
});

describe.runIf(ENGINE === 'pglite')('a killed server', () => {
  it('leaves a stale socket that does not block the next start', { timeout: 300_000 }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mbx-handoff-kill-'));
    const server = await serveProcess({ MAILBOX_DATA_DIR: dir, DATABASE_URL: '', ...NO_RESOURCES }, 'api');
    try {
      await server.start();
      await server.kill();
      const stale = path.join(dir, 'admin.sock');
      expect(lstatSync(stale).isSocket()).toBe(true);
      await server.start();
      const domain = await mailbox(dir, 'domain', 'create', 'after-kill.example');
      expect(domain.code, domain.stderr).toBe(0);
      // Handed off, so the running server's API knows the token at once.
      const res = await fetch(`${server.url}/api/domain/mailboxes`, {
        headers: { authorization: `Bearer ${JSON.parse(domain.stdout).accessToken}` },
      });
      expect(res.status).toBe(200);
      expect(lstatSync(stale).mode & 0o777).toBe(0o600);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
