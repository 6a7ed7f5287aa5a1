import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { sql } from '../../src/storage/database.js';
import { verifyPassword } from '../../src/core/access/password.js';
import { FINALIZER } from '../../operator/src/names.js';
import { loadKubeConfig } from '../../operator/src/kube.js';
import { kubeRequest } from './support/raw-client.js';
import { operatorEnv, readyCondition, waitFor, type OperatorEnv } from './support/fixture.js';

// The operator end to end against the API server the k8s project runs (printed at start; the
// test names carry the mode): create, update, password rotation, invalid spec, delete.

const cluster = inject('k8sCluster');
let env: OperatorEnv;
beforeAll(async () => {
  env = await operatorEnv();
});
afterAll(async () => {
  await env?.close();
});

const db = () => env.operators[0]!.runtime.services.db;
const tokens = () => env.operators[0]!.runtime.services.tokenAuth;
const authenticates = (token: string | undefined) =>
  tokens()
    .authenticate(token, null)
    .then(
      () => true,
      () => false,
    );

describe(`operator lifecycle [${cluster.mode}]`, () => {
  const domainName = `op-${Date.now().toString(36)}.test`;

  it('turns a Domain and a Mailbox into rows, owned token Secrets, status and Events', async () => {
    await env.create('Domain', 'example', { domain: domainName, sendRateLimitPerMinute: 30 });
    await env.putSecret('agent-password', { password: 'first-password-123' });
    await env.create('Mailbox', 'agent', {
      address: `agent@${domainName}`,
      displayName: 'Agent',
      aliases: [`bot@${domainName}`],
      passwordSecretRef: { name: 'agent-password', key: 'password' },
    });

    const domain = await env.ready('Domain', 'example');
    expect(domain.metadata.finalizers).toContain(FINALIZER);
    expect(domain.status).toMatchObject({
      observedGeneration: 1,
      domainId: expect.stringMatching(/^dom_/),
      tokenSecretName: 'example-domain-token',
    });
    expect(readyCondition(domain)).toMatchObject({ status: 'True', reason: 'Reconciled' });

    const mailbox = await env.ready('Mailbox', 'agent');
    expect(mailbox.status).toMatchObject({
      mailboxId: expect.stringMatching(/^mbx_/),
      domainId: domain.status!.domainId,
      tokenSecretName: 'agent-mailbox-token',
    });

    const domainSecret = (await env.secret('example-domain-token'))!;
    expect(Object.keys(domainSecret.data).sort()).toEqual(['accessToken', 'expiresAtTs', 'tokenId']);
    expect(domainSecret.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: 'mailbox-service.dev/v1alpha1',
        kind: 'Domain',
        name: 'example',
        uid: domain.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      }),
    ]);
    expect(domainSecret.labels['app.kubernetes.io/managed-by']).toBe('mailbox-operator');
    expect(await authenticates(domainSecret.data.accessToken)).toBe(true);
    const mailboxSecret = (await env.secret('agent-mailbox-token'))!;
    expect(mailboxSecret.ownerReferences[0]).toMatchObject({
      kind: 'Mailbox',
      name: 'agent',
      uid: mailbox.metadata.uid,
      controller: true,
    });
    expect(await authenticates(mailboxSecret.data.accessToken)).toBe(true);

    const row = await db().one(sql<{
      address: string;
      display_name: string;
      password_hash: string;
      resource_key: string;
    }>`
      select address, display_name, password_hash, resource_key from mailbox where id = ${mailbox.status!.mailboxId as string}`);
    expect(row).toMatchObject({
      address: `agent@${domainName}`,
      display_name: 'Agent',
      resource_key: `${env.namespace}/agent`,
    });
    expect(await verifyPassword('first-password-123', row!.password_hash)).toBe(true);
    const aliases = await db().rows(
      sql<{
        address: string;
      }>`select address from mailbox_alias where mailbox_id = ${mailbox.status!.mailboxId as string} and is_active`,
    );
    expect(aliases.map((a) => a.address)).toEqual([`bot@${domainName}`]);

    const events = await waitFor('Reconciled and SecretWritten events', async () => {
      const list = await env.events('agent');
      return list.some((e) => e.reason === 'Reconciled') && list.some((e) => e.reason === 'SecretWritten')
        ? list
        : null;
    });
    expect(events.find((e) => e.reason === 'Reconciled')).toMatchObject({
      type: 'Normal',
      source: { component: 'mailbox-operator' },
      involvedObject: { kind: 'Mailbox', uid: mailbox.metadata.uid },
    });
  });

  it("writes the Domain's DKIM key and DNS record into an owned Secret named in its status", async () => {
    const dkim = await waitFor('the DKIM Secret', () => env.secret('example-dkim'));
    const domain = (await env.get('Domain', 'example'))!;
    expect(Object.keys(dkim.data).sort()).toEqual(['dnsName', 'dnsValue', 'privateKey', 'publicKey', 'selector']);
    expect(dkim.data.dnsName).toBe(`${dkim.data.selector}._domainkey.${domainName}`);
    expect(dkim.data.dnsValue).toBe(`v=DKIM1; k=rsa; p=${dkim.data.publicKey}`);
    expect(dkim.data.privateKey).toContain('BEGIN PRIVATE KEY');
    expect(dkim.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Domain', name: 'example', uid: domain.metadata.uid, controller: true }),
    ]);
    // The same key the service signs with.
    expect(
      (await env.operators[0]!.runtime.services.transport.dkim.record(domain.status!.domainId as string)).value,
    ).toBe(dkim.data.dnsValue);
    await waitFor(
      'status.dkimSecretName',
      async () => (await env.get('Domain', 'example'))!.status!.dkimSecretName === 'example-dkim',
    );
  });

  it.skipIf(cluster.mode === 'stand-in')(
    'shows the status in the `kubectl get mailboxes` columns (server-side Table)',
    async () => {
      const table = await kubeRequest(
        loadKubeConfig(cluster.kubeconfigPath),
        'GET',
        `/apis/mailbox-service.dev/v1alpha1/namespaces/${env.namespace}/mailboxes`,
        undefined,
        undefined,
        'application/json;as=Table;v=v1;g=meta.k8s.io',
      );
      const columns = (table.body.columnDefinitions as Array<{ name: string; priority: number }>)
        .filter((c) => !c.priority)
        .map((c) => c.name);
      expect(columns).toEqual(['Name', 'Address', 'Ready', 'Reason', 'Age']);
      const row = (table.body.rows as Array<{ cells: unknown[] }>).find((r) => r.cells[0] === 'agent')!;
      expect(row.cells.slice(1, 4)).toEqual([`agent@${domainName}`, 'True', 'Reconciled']);
    },
  );

  it('converges on a spec change and reports the new generation', async () => {
    await env.patchSpec('Mailbox', 'agent', { displayName: 'Agent Two', aliases: [`helper@${domainName}`] });
    const mailbox = await env.ready('Mailbox', 'agent');
    expect(mailbox.status!.observedGeneration).toBe(2);
    const id = mailbox.status!.mailboxId as string;
    const row = await db().one(sql<{ display_name: string }>`select display_name from mailbox where id = ${id}`);
    expect(row!.display_name).toBe('Agent Two');
    const aliases = await db().rows(
      sql<{
        address: string;
        is_active: boolean;
      }>`select address, is_active from mailbox_alias where mailbox_id = ${id} order by address`,
    );
    expect(aliases).toEqual([
      { address: `bot@${domainName}`, is_active: false },
      { address: `helper@${domainName}`, is_active: true },
    ]);
  });

  it('re-applies the password when its Secret changes, and re-writes a deleted token Secret', async () => {
    const id = (await env.get('Mailbox', 'agent'))!.status!.mailboxId as string;
    await env.putSecret('agent-password', { password: 'rotated-password-456' });
    await waitFor('the rotated password applied', async () => {
      const row = await db().one(sql<{ password_hash: string }>`select password_hash from mailbox where id = ${id}`);
      return verifyPassword('rotated-password-456', row!.password_hash);
    });
    const before = (await env.secret('agent-mailbox-token'))!.data;
    await env.clients.core.deleteNamespacedSecret({ namespace: env.namespace, name: 'agent-mailbox-token' });
    const after = await waitFor('the token Secret written again', () => env.secret('agent-mailbox-token'));
    // The Secret lost its token, so a new one is minted (the old one was not disabled). The core
    // writes the Secret inside the token's transaction, so it can show up a moment before the commit.
    expect(after.data.tokenId).not.toBe(before.tokenId);
    await waitFor('the new token authenticating', () => authenticates(after.data.accessToken), 5_000);
  });

  it('reports what only the core can check as InvalidSpec, with a Warning Event', async () => {
    await env.create('Mailbox', 'stray', { address: `stray@${domainName}`, aliases: [`stray@elsewhere.test`] });
    const obj = await waitFor('InvalidSpec', async () => {
      const o = await env.get('Mailbox', 'stray');
      return readyCondition(o)?.reason === 'InvalidSpec' ? o : null;
    });
    expect(readyCondition(obj)).toMatchObject({
      status: 'False',
      message: expect.stringContaining("must be in the mailbox's domain"),
    });
    await waitFor('a Warning Event', async () =>
      (await env.events('stray')).some((e) => e.type === 'Warning' && e.reason === 'InvalidSpec'),
    );
    await env.patchSpec('Mailbox', 'stray', { aliases: [`stray2@${domainName}`] });
    expect((await env.ready('Mailbox', 'stray')).status!.observedGeneration).toBe(2);
  });

  it('deleting a Mailbox disables it and its tokens, removes its Secret, then releases the finalizer', async () => {
    const mailbox = (await env.get('Mailbox', 'agent'))!;
    const token = (await env.secret('agent-mailbox-token'))!.data.accessToken;
    await env.remove('Mailbox', 'agent');
    await waitFor('the Mailbox gone', async () => (await env.get('Mailbox', 'agent')) === null);
    const row = await db().one(
      sql<{
        disabled_at: Date | null;
      }>`select disabled_at from mailbox where id = ${mailbox.status!.mailboxId as string}`,
    );
    expect(row!.disabled_at).not.toBeNull();
    expect(await authenticates(token)).toBe(false);
    expect(await env.secret('agent-mailbox-token')).toBeNull();
    expect((await env.events('agent')).some((e) => e.reason === 'Finalized')).toBe(true);
  });

  it('deleting the Domain disables it and its domain token', async () => {
    const token = (await env.secret('example-domain-token'))!.data.accessToken;
    await env.remove('Domain', 'example');
    await waitFor('the Domain gone', async () => (await env.get('Domain', 'example')) === null);
    expect(await authenticates(token)).toBe(false);
    expect(await env.secret('example-dkim')).toBeNull();
  });

  it('serves /healthz and /metrics on OPERATOR_PORT', async () => {
    const op = env.operators[0]!;
    const health = await fetch(`http://127.0.0.1:${op.port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', leader: true, identity: op.identity });
    const metrics = await (await fetch(`http://127.0.0.1:${op.port}/metrics`)).text();
    expect(metrics).toMatch(/^mailbox_operator_leader 1$/m);
    expect(metrics).toMatch(/^mailbox_operator_reconciles_total\{kind="Mailbox",outcome="created"\} \d+$/m);
  });
});
