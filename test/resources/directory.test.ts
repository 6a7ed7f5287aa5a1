import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import type { Logger } from '../../src/core/base/logger.js';
import { sql } from '../../src/storage/database.js';

// MAILBOX_RESOURCES_DIR end to end: the real service with the directory source, real storage,
// the file secret store under the data dir, and edits picked up by the watcher (the periodic
// resync is 60 s, far beyond these waits). The steps build on each other, in order.

const dir = mkdtempSync(path.join(tmpdir(), 'mbx-resources-'));
const logs: Array<{ level: string; event: string; fields: Record<string, unknown> }> = [];
const capture =
  (level: string) =>
  (event: string, fields: Record<string, unknown> = {}) => {
    logs.push({ level, event, fields });
  };
const log: Logger = { debug: capture('debug'), info: capture('info'), warn: capture('warn'), error: capture('error') };

let server: TestServer;
beforeAll(async () => {
  copyFileSync('resources/example.yaml', path.join(dir, 'example.yaml'));
  server = await startTestServer({ env: { MAILBOX_RESOURCES_DIR: dir }, log });
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const db = () => server.runtime.services.db;
const secretPath = (name: string) => path.join(server.dataDir, 'secrets', 'default', `${name}.json`);
const secret = (name: string) => JSON.parse(readFileSync(secretPath(name), 'utf8')) as Record<string, string>;
const statusOf = (kind: string, name: string) => {
  const file = path.join(server.dataDir, 'status', 'default', `${kind}-${name}.json`);
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).status : null;
};
const login = (mailboxAddress: string, password: string) =>
  server.runtime.services.login.login({ mailboxAddress, password }, null).then(
    () => true,
    () => false,
  );
const mailboxRow = (address: string) =>
  db().one(sql<{ id: string; display_name: string; disabled_at: string | null }>`
  select id, display_name, disabled_at from mailbox where address = ${address}`);
const activeAddresses = async (table: 'mailbox_alias' | 'sender_identity', mailboxId: string) =>
  (
    await db().rows(
      sql<{
        address: string;
      }>`select address from ${sql.table(table)} where mailbox_id = ${mailboxId} and is_active order by address`,
    )
  ).map((r) => r.address);

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the directory source has run another pass over `name` after this call. */
async function nextPass(name: string) {
  const from = logs.length;
  return waitFor(`a pass over ${name}`, () =>
    logs.slice(from).find((l) => l.event.startsWith('resource.') && l.fields.name === name && 'outcome' in l.fields),
  );
}

const mailboxYaml = (name: string, spec: string) =>
  `apiVersion: mailbox-service.dev/v1alpha1\nkind: Mailbox\nmetadata: { name: ${name} }\nspec: ${spec}\n`;

describe('the resources directory', () => {
  it('applies the quick-start manifests at start: domain, mailbox, alias, identities, secrets', async () => {
    const domain = await db().one(
      sql<{
        resource_key: string;
        send_rate_limit_per_minute: number;
      }>`select resource_key, send_rate_limit_per_minute from domain where name = 'example.test'`,
    );
    expect(domain).toEqual({ resource_key: 'default/example-test', send_rate_limit_per_minute: 60 });
    const agent = (await mailboxRow('agent@example.test'))!;
    expect(agent).toMatchObject({ display_name: 'Agent', disabled_at: null });
    expect(await activeAddresses('mailbox_alias', agent.id)).toEqual(['assistant@example.test']);
    expect(await activeAddresses('sender_identity', agent.id)).toEqual([
      'agent@example.test',
      'assistant@example.test',
    ]);

    for (const name of ['example-test-domain-token', 'agent-mailbox-token', 'agent-password']) {
      expect(statSync(secretPath(name)).mode & 0o777).toBe(0o600);
    }
    expect(statSync(path.dirname(secretPath('x'))).mode & 0o777).toBe(0o700);
    const domainSecret = secret('example-test-domain-token');
    expect(Object.keys(domainSecret).sort()).toEqual(['accessToken', 'expiresAtTs', 'tokenId']);
    // docs/contract.md: file secrets carry …Ts as integer milliseconds (Kubernetes Secrets stay strings).
    expect(Number.isInteger(domainSecret.expiresAtTs)).toBe(true);
    expect(domainSecret.expiresAtTs).toBeGreaterThan(Date.now());
    expect(Number.isInteger(secret('agent-mailbox-token').expiresAtTs)).toBe(true);

    const created = await server
      .api(domainSecret.accessToken)
      .post('/api/mailboxes', { address: 'bot@example.test', displayName: 'Bot' });
    expect(created.status).toBe(201);
    const mailboxToken = secret('agent-mailbox-token').accessToken;
    expect((await server.api(mailboxToken).get('/api/mailbox/access-tokens')).status).toBe(200);
    expect(await login('agent@example.test', 'agent-password-123')).toBe(true);
    expect(statusOf('mailbox', 'agent')).toMatchObject({
      conditions: [{ type: 'Ready', status: 'True', reason: 'Reconciled' }],
      mailboxId: agent.id,
      tokenSecretName: 'agent-mailbox-token',
    });
  });

  it('re-applying is a no-op: same tokens, no new rows', async () => {
    const count = async () =>
      (await db().one(sql<{
        n: string;
      }>`select (select count(*) from access_token) + (select count(*) from mailbox_alias)
      + (select count(*) from sender_identity) + (select count(*) from mailbox) as n`))!.n;
    const before = {
      rows: await count(),
      domain: secret('example-test-domain-token').tokenId,
      mailbox: secret('agent-mailbox-token').tokenId,
    };
    const pass = nextPass('agent');
    writeFileSync(path.join(dir, 'example.yaml'), readFileSync('resources/example.yaml'));
    expect((await pass).fields.outcome).toBe('unchanged');
    expect({
      rows: await count(),
      domain: secret('example-test-domain-token').tokenId,
      mailbox: secret('agent-mailbox-token').tokenId,
    }).toEqual(before);
  });

  it('picks up an edit within seconds: display name and aliases converge, dropped aliases deactivate', async () => {
    const started = Date.now();
    const edited = readFileSync('resources/example.yaml', 'utf8')
      .replace('displayName: Agent', 'displayName: Agent Smith')
      .replace('aliases: [assistant@example.test]', 'aliases: [helper@example.test]');
    writeFileSync(path.join(dir, 'example.yaml'), edited);
    const agent = await waitFor('the new display name', async () => {
      const row = await mailboxRow('agent@example.test');
      return row?.display_name === 'Agent Smith' ? row : null;
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await activeAddresses('mailbox_alias', agent.id)).toEqual(['helper@example.test']);
    expect(await activeAddresses('sender_identity', agent.id)).toEqual(['agent@example.test', 'helper@example.test']);
    const old = await db().one(
      sql<{ is_active: boolean }>`select is_active from mailbox_alias where address = 'assistant@example.test'`,
    );
    expect(old).toEqual({ is_active: false }); // kept, inactive
  });

  it('a changed password Secret changes the password', async () => {
    const edited = readFileSync(path.join(dir, 'example.yaml'), 'utf8').replace(
      'password: agent-password-123',
      'password: a-new-password-456',
    );
    writeFileSync(path.join(dir, 'example.yaml'), edited);
    await waitFor('the new password', () => login('agent@example.test', 'a-new-password-456'));
    expect(await login('agent@example.test', 'agent-password-123')).toBe(false);
  });

  it('a hand-written password secret file is picked up, and its absence is Ready False', async () => {
    writeFileSync(
      path.join(dir, 'hand.yaml'),
      mailboxYaml('hand', '{ address: hand@example.test, passwordSecretRef: { name: hand-password, key: pw } }'),
    );
    await waitFor('SecretNotFound', () => statusOf('mailbox', 'hand')?.conditions[0].reason === 'SecretNotFound');
    expect(existsSync(secretPath('hand-mailbox-token'))).toBe(true); // the rest converged meanwhile
    writeFileSync(secretPath('hand-password'), JSON.stringify({ pw: 'hand-written-pw' }), { mode: 0o600 });
    await waitFor('the hand-written password', () => login('hand@example.test', 'hand-written-pw'));
    await waitFor('Ready', () => statusOf('mailbox', 'hand')?.conditions[0].status === 'True');
  });

  it('a Mailbox whose Domain is missing is Ready False, then converges when the Domain appears', async () => {
    writeFileSync(path.join(dir, 'later.yaml'), mailboxYaml('later', '{ address: someone@later.test }'));
    await waitFor('DomainNotFound', () => statusOf('mailbox', 'later')?.conditions[0].reason === 'DomainNotFound');
    expect(await mailboxRow('someone@later.test')).toBeUndefined();
    writeFileSync(
      path.join(dir, 'later-domain.yaml'),
      'apiVersion: mailbox-service.dev/v1alpha1\nkind: Domain\nmetadata: { name: later }\nspec: { domain: later.test }\n',
    );
    await waitFor('the mailbox', () => mailboxRow('someone@later.test'));
    await waitFor('Ready', () => statusOf('mailbox', 'later')?.conditions[0].status === 'True');
  });

  it('reports a malformed manifest, applies the others, and deletes nothing while it is broken', async () => {
    const bad =
      mailboxYaml('survivor', '{ address: survivor@example.test }') +
      '---\n' +
      mailboxYaml('broken', '{ address: not an address }');
    writeFileSync(path.join(dir, 'bad.yaml'), bad);
    await waitFor('the valid document', () => mailboxRow('survivor@example.test'));
    const reported = logs.find((l) => l.event === 'resource.manifest_invalid');
    expect(reported?.fields).toMatchObject({ file: path.join(dir, 'bad.yaml'), document: 2 });
    expect(String(reported?.fields.message)).toContain('spec.address');

    const handToken = secret('hand-mailbox-token').accessToken;
    rmSync(path.join(dir, 'hand.yaml'));
    await new Promise((r) => setTimeout(r, 500));
    const pass = nextPass('survivor'); // a pass that certainly listed the directory without hand.yaml
    writeFileSync(path.join(dir, 'bad.yaml'), bad);
    await pass;
    expect((await mailboxRow('hand@example.test'))!.disabled_at).toBeNull();

    // Fixing the broken file completes the listing, so the removal of hand.yaml now takes effect.
    writeFileSync(path.join(dir, 'bad.yaml'), mailboxYaml('survivor', '{ address: survivor@example.test }'));
    await waitFor(
      'the removed mailbox to be disabled',
      async () => (await mailboxRow('hand@example.test'))?.disabled_at,
    );
    const denied = await server.api(handToken).get('/api/mailbox/access-tokens');
    expect(denied.status).toBe(401);
    // The secret and status files go after the rows; under load that can take a moment.
    await waitFor('the token secret to be removed', () => !existsSync(secretPath('hand-mailbox-token')));
    await waitFor('the status to be removed', () => statusOf('mailbox', 'hand') === null);
  });

  it('removing the quick-start file disables its domain, domain token, mailbox and mailbox token', async () => {
    const domainToken = secret('example-test-domain-token').accessToken;
    const mailboxToken = secret('agent-mailbox-token').accessToken;
    rmSync(path.join(dir, 'example.yaml'));
    await waitFor(
      'the domain to be disabled',
      async () =>
        (
          await db().one(
            sql<{ disabled_at: string | null }>`select disabled_at from domain where name = 'example.test'`,
          )
        )?.disabled_at,
    );
    await waitFor('the mailbox to be disabled', async () => (await mailboxRow('agent@example.test'))?.disabled_at);
    expect((await server.api(domainToken).get('/api/mailbox/access-tokens')).status).toBe(401);
    expect((await server.api(mailboxToken).get('/api/mailbox/access-tokens')).status).toBe(401);
    expect(logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
