import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, createScratchDatabase } from '../support/harness.js';
import { mailboxArgs } from '../support/mailbox-command.js';

// `mailbox` as a person types it: help that exits 0, admin commands on the configured storage
// (PGlite under MAILBOX_DATA_DIR, or PostgreSQL with MAILBOX_TEST_ENGINE=postgres), one-line errors.
const ROOT = path.resolve(import.meta.dirname, '../..');
let env: Record<string, string>;
let dataDir: string;
let drop: (() => Promise<void>) | undefined;

function mailbox(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...mailboxArgs(), ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-cli-'));
  const db = ENGINE === 'postgres' ? await createScratchDatabase() : null;
  drop = db?.drop;
  env = { MAILBOX_DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...(db ? { DATABASE_URL: db.url } : {}) };
});
afterAll(async () => {
  await drop?.();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('mailbox --help', () => {
  it('exits 0 for the program and for every command, listing the admin commands', { timeout: 300_000 }, async () => {
    const top = await mailbox('--help');
    expect(top.code).toBe(0);
    for (const command of ['serve', 'migrate', 'apply', 'operator', 'domain', 'mailbox', 'token'])
      expect(top.stdout).toContain(command);
    const args = [['serve', '--help'], ['mailbox', '--help'], ['token', 'create', '--help'], []];
    const runs = await Promise.all(args.map((a) => mailbox(...a)));
    runs.forEach((r, i) => {
      expect(r.code, args[i]!.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/Usage: mailbox/);
    });
  });

  it('runs as the README says, ./mailbox from the checkout', { timeout: 120_000 }, async () => {
    const r = spawnSync(path.join(ROOT, 'mailbox'), ['--help'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/Usage: mailbox/);
  });

  it('refuses an unknown command with status 1 and a pointer to --help', { timeout: 120_000 }, async () => {
    const r = await mailbox('frobnicate');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("unknown command 'frobnicate'");
  });

  it('names a bad variable in one line without echoing its secret', { timeout: 120_000 }, async () => {
    const bad = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [...mailboxArgs(), 'migrate'], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: 'mysql://app:s3cret-pw@db/mail' },
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('exit', (code) => resolve({ code, stderr }));
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split('\n')).toEqual([
      'mailbox: invalid DATABASE_URL: must be a postgres:// or postgresql:// URL',
    ]);
  });
});

describe('admin commands on the configured storage', () => {
  it('creates a domain, a mailbox with a password and a token, then lists them', { timeout: 600_000 }, async () => {
    const domain = await mailbox('domain', 'create', 'cli.example');
    expect(domain.code, domain.stderr).toBe(0);
    expect(JSON.parse(domain.stdout)).toMatchObject({
      domainName: 'cli.example',
      accessToken: expect.stringMatching(/^mbxd_/),
    });

    const created = await mailbox(
      'mailbox',
      'create',
      'ops@cli.example',
      '--display-name',
      'Ops',
      '--password',
      'ops-password-1',
    );
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({
      mailbox: { address: 'ops@cli.example', displayName: 'Ops' },
      initialAccessToken: expect.stringMatching(/^mbxm_/),
      passwordSet: true,
    });

    const token = await mailbox(
      'token',
      'create',
      'ops@cli.example',
      '--name',
      'ci',
      '--scopes',
      'MailboxRead',
      '--expires-in',
      '7',
    );
    expect(token.code, token.stderr).toBe(0);
    const minted = JSON.parse(token.stdout);
    expect(minted).toMatchObject({
      tokenName: 'ci',
      scopes: ['MailboxRead'],
      accessToken: expect.stringMatching(/^mbxm_/),
    });
    expect(minted.expiresAtTs - Date.now()).toBeGreaterThan(6 * 86_400_000);
    expect(minted.expiresAtTs - Date.now()).toBeLessThan(8 * 86_400_000);

    const tokens = await mailbox('token', 'list', 'ops@cli.example');
    expect(
      JSON.parse(tokens.stdout)
        .map((t: { tokenName: string }) => t.tokenName)
        .sort(),
    ).toEqual(['bootstrap', 'ci']);
    expect(tokens.stdout).not.toContain(minted.accessToken);

    const list = await mailbox('mailbox', 'list', 'cli.example');
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ address: 'ops@cli.example' })]);
  });

  it(
    'goes through the same rules as the API: a short password and an unknown domain are refused',
    { timeout: 120_000 },
    async () => {
      const short = await mailbox('mailbox', 'set-password', 'ops@cli.example', '--password', 'short');
      expect(short.code).toBe(1);
      expect(short.stderr).toMatch(/^mailbox: password: .*8/);
      const unknown = await mailbox('mailbox', 'create', 'x@nowhere.example');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('No domain nowhere.example');
    },
  );
});

const systemNode = '/usr/bin/node';
const old =
  existsSync(systemNode) &&
  Number(spawnSync(systemNode, ['-p', 'process.versions.node.split(".")[0]']).stdout.toString()) < 22;
describe.skipIf(!old)('on an older Node', () => {
  it('says in one line which Node it needs', () => {
    const r = spawnSync(systemNode, ['--import', 'tsx', 'src/cli.ts', '--help'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^mailbox: Node\.js >= 22\.17 is required, this is v\d+/);
  });
});
