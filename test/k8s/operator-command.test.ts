import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubeClients, loadKubeConfig, MERGE_PATCH, type KubeClients } from '../../operator/src/kube.js';
import { createScratchDatabase } from '../support/harness.js';
import { mailboxArgs } from '../support/mailbox-command.js';
import { freePort } from './support/apiserver.js';
import { readyCondition, waitFor } from './support/fixture.js';

// `mailbox operator` as its own process (TypeScript through tsx), configured only by environment
// variables as the chart configures it: it leads, reconciles, and on SIGTERM finishes, releases
// its Lease and exits 0.

const cluster = inject('k8sCluster');
const root = path.resolve(import.meta.dirname, '../..');
let clients: KubeClients;
let child: ChildProcess;
let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
let port: number;
const namespace = `mbx-cmd-${randomBytes(4).toString('hex')}`;
const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-cmd-'));
let output = '';

beforeAll(async () => {
  clients = kubeClients(loadKubeConfig(cluster.kubeconfigPath));
  await clients.core.createNamespace({ body: { metadata: { name: namespace } } });
  scratch = await createScratchDatabase();
  port = await freePort();
  child = spawn(process.execPath, [...mailboxArgs(), 'operator'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: scratch.url,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      MAILBOX_DATA_DIR: dataDir,
      KUBECONFIG: cluster.kubeconfigPath,
      OPERATOR_PORT: String(port),
      HOST: '127.0.0.1',
      OPERATOR_WATCH_NAMESPACE: namespace,
      OPERATOR_LEASE_NAMESPACE: namespace,
      OPERATOR_LEASE_NAME: 'cmd-operator',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    output += d.toString();
  });
});
afterAll(async () => {
  if (child.exitCode === null) child.kill('SIGKILL');
  // No operator runs any more to release its finalizer (a real cluster would keep the namespace).
  await clients.custom
    .patchNamespacedCustomObject(
      {
        group: 'mailbox-service.dev',
        version: 'v1alpha1',
        namespace,
        plural: 'domains',
        name: 'cmd',
        body: { metadata: { finalizers: null } },
      },
      MERGE_PATCH,
    )
    .catch(() => undefined);
  await clients.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  await scratch?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe(`mailbox operator (a process) [${cluster.mode}]`, () => {
  it('leads, reconciles, and on SIGTERM releases its Lease and exits 0', async () => {
    await waitFor(
      `the operator leading (output: ${output.slice(-500)})`,
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
        return res?.status === 200 && ((await res.json()) as { leader: boolean }).leader;
      },
      60_000,
    );
    await clients.custom.createNamespacedCustomObject({
      group: 'mailbox-service.dev',
      version: 'v1alpha1',
      namespace,
      plural: 'domains',
      body: {
        apiVersion: 'mailbox-service.dev/v1alpha1',
        kind: 'Domain',
        metadata: { name: 'cmd' },
        spec: { domain: `cmd-${Date.now().toString(36)}.test` },
      },
    });
    await waitFor(
      'the Domain Ready',
      async () =>
        readyCondition(
          (await clients.custom.getNamespacedCustomObject({
            group: 'mailbox-service.dev',
            version: 'v1alpha1',
            namespace,
            plural: 'domains',
            name: 'cmd',
          })) as never,
        )?.status === 'True',
    );

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const lease = await clients.coordination.readNamespacedLease({ namespace, name: 'cmd-operator' });
    expect(lease.spec?.holderIdentity ?? '').toBe('');
    expect(output).toContain('"event":"operator.lease_released"');
  });
});
