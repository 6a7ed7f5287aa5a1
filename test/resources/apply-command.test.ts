import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, createScratchDatabase } from '../support/harness.js';
import { loadConfig, type Config } from '../../src/config/config.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { ApplyFailedError, applyManifestsOnce } from '../../src/apply-command.js';

// `mailbox apply -f`: one pass against a real database of its own (a scratch PostgreSQL database,
// or a PGlite cluster under a temporary data dir that survives between the runs), then it exits.

const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-apply-'));
let config: Readonly<Config>;
let drop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  const scratch = ENGINE === 'postgres' ? await createScratchDatabase() : undefined;
  drop = scratch?.drop;
  config = loadConfig({
    MAILBOX_DATA_DIR: dataDir,
    MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
    ...(scratch ? { DATABASE_URL: scratch.url } : {}),
  });
});
afterAll(async () => {
  await drop?.();
  rmSync(dataDir, { recursive: true, force: true });
});

const apply = (target: string) => applyManifestsOnce(config, target, { log: silentLogger });
const secret = (name: string) =>
  JSON.parse(readFileSync(path.join(dataDir, 'secrets', 'default', `${name}.json`), 'utf8'));

describe('applyManifestsOnce', () => {
  it('applies a file and prints one line per resource', async () => {
    const summary = await apply('resources/example.yaml');
    expect(summary.split('\n')).toEqual([
      'Secret default/agent-password: created',
      'Domain default/example-test: created',
      'Mailbox default/agent: created',
      '3 resources: 3 created, 0 updated, 0 unchanged, 0 failed',
    ]);
    expect(statSync(path.join(dataDir, 'secrets', 'default', 'agent-mailbox-token.json')).mode & 0o777).toBe(0o600);
  }, 120_000); // the first run creates a PGlite cluster on disk, slow on a busy machine

  it('is a no-op the second time: same tokens', async () => {
    const before = [secret('example-test-domain-token').tokenId, secret('agent-mailbox-token').tokenId];
    expect((await apply('resources/example.yaml')).split('\n').at(-1)).toBe(
      '3 resources: 0 created, 0 updated, 3 unchanged, 0 failed',
    );
    expect([secret('example-test-domain-token').tokenId, secret('agent-mailbox-token').tokenId]).toEqual(before);
  });

  it('applies what it can from a directory and fails with a summary naming each problem', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mbx-apply-dir-'));
    const mailbox = (name: string, address: string) =>
      `apiVersion: mailbox-service.dev/v1alpha1\nkind: Mailbox\nmetadata: { name: ${name} }\nspec: { address: "${address}", displayName: ${name} }\n`;
    writeFileSync(path.join(dir, 'good.yaml'), mailbox('ops', 'ops@example.test'));
    writeFileSync(path.join(dir, 'orphan.yaml'), mailbox('orphan', 'x@nowhere.test'));
    writeFileSync(path.join(dir, 'broken.yaml'), mailbox('broken', 'not an address'));
    const error = await apply(dir).then(
      () => null,
      (err: unknown) => err,
    );
    rmSync(dir, { recursive: true, force: true });
    expect(error).toBeInstanceOf(ApplyFailedError);
    const lines = (error as ApplyFailedError).summary.split('\n');
    expect(lines).toContain('Mailbox default/ops: created');
    expect(lines.find((l) => l.startsWith('Mailbox default/orphan:'))).toMatch(
      /failed \(DomainNotFound: domain nowhere\.test/,
    );
    expect(lines.find((l) => l.startsWith('invalid manifest'))).toContain(
      `${path.join(dir, 'broken.yaml')}: document 1 (line 1): Mailbox broken: spec.address`,
    );
    expect(lines.at(-1)).toBe('2 resources: 1 created, 0 updated, 0 unchanged, 1 failed; 1 invalid manifests');
    expect(secret('ops-mailbox-token').accessToken).toMatch(/^mbxm_/);
  });
});
