import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubeClients, loadKubeConfig, MERGE_PATCH, type KubeClients } from '../../operator/src/kube.js';
import { KubernetesSecretStore } from '../../operator/src/kubernetes-secret-store.js';
import { FINALIZER, GROUP, VERSION } from '../../operator/src/names.js';
import { operatorMetrics } from '../../operator/src/operator-metrics.js';
import { operatorEnv, readyCondition, waitFor, type OperatorEnv } from './support/fixture.js';

// Conflicts are real: a second client changes the object between the operator's read and its
// write, so the API server itself answers 409 and the operator must read again and retry.

const cluster = inject('k8sCluster');
let env: OperatorEnv;

/** Wraps one method of an API client so its first call is preceded by `meddle()` (a concurrent writer). */
function meddleOnce<T extends object>(api: T, method: string, meddle: () => Promise<void>): T & { calls: number } {
  let calls = 0;
  return new Proxy(api, {
    get(target, prop, receiver) {
      if (prop === 'calls') return calls;
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop !== method) return value.bind(target);
      return async (...args: unknown[]) => {
        if (++calls === 1) await meddle();
        return value.apply(target, args);
      };
    },
  }) as T & { calls: number };
}

async function conflictCount(operation: string): Promise<number> {
  const metric = await operatorMetrics.conflicts.get();
  return metric.values.find((v) => v.labels.operation === operation)?.value ?? 0;
}

let plain: KubeClients;
const touch = (name: string) => async () => {
  await plain.custom.patchNamespacedCustomObject(
    {
      group: GROUP,
      version: VERSION,
      namespace: env.namespace,
      plural: 'domains',
      name,
      body: { metadata: { labels: { touched: 'yes' } } },
    },
    MERGE_PATCH,
  );
};

beforeAll(async () => {
  plain = kubeClients(loadKubeConfig(cluster.kubeconfigPath));
  const custom = meddleOnce(plain.custom, 'patchNamespacedCustomObject', () => touch('raced')());
  env = await operatorEnv({ operator: { clients: { ...plain, custom } } });
});
afterAll(async () => {
  await env?.close();
});

describe(`conflicts and retries [${cluster.mode}]`, () => {
  it("adds the finalizer after a 409 from a concurrent writer, and keeps that writer's change", async () => {
    const before = await conflictCount('finalizer.add');
    await env.create('Domain', 'raced', { domain: `raced-${Date.now().toString(36)}.test` });
    const domain = await env.ready('Domain', 'raced');
    expect(domain.metadata.finalizers).toContain(FINALIZER);
    expect(domain.metadata.labels).toMatchObject({ touched: 'yes' });
    expect(await conflictCount('finalizer.add')).toBeGreaterThan(before);
  });

  it('replaces a token Secret after a 409, reading it again first', async () => {
    const owner = (await env.get('Domain', 'raced'))!;
    const ref = { kind: 'Domain' as const, namespace: env.namespace, name: 'raced', uid: owner.metadata.uid };
    const core = meddleOnce(plain.core, 'replaceNamespacedSecret', async () => {
      const s = await plain.core.readNamespacedSecret({ namespace: env.namespace, name: 'raced-extra' });
      await plain.core.replaceNamespacedSecret({
        namespace: env.namespace,
        name: 'raced-extra',
        body: { ...s, metadata: { ...s.metadata, labels: { ...s.metadata?.labels, other: 'writer' } } },
      });
    });
    const store = new KubernetesSecretStore(core);
    await store.put(env.namespace, 'raced-extra', { a: '1' }, ref);
    const before = await conflictCount('secret.put');
    await store.put(env.namespace, 'raced-extra', { a: '2', b: '3' }, ref);
    expect(core.calls).toBe(2); // the stale write (409) and the retry
    expect(await conflictCount('secret.put')).toBe(before + 1);
    const secret = (await env.secret('raced-extra'))!;
    expect(secret.data).toEqual({ a: '2', b: '3' });
    expect(secret.labels).toMatchObject({ other: 'writer', 'app.kubernetes.io/managed-by': 'mailbox-operator' });
  });

  it('refuses to take over a Secret another object controls', async () => {
    const store = new KubernetesSecretStore(plain.core);
    await expect(
      store.put(
        env.namespace,
        'raced-extra',
        { a: '4' },
        { kind: 'Domain', namespace: env.namespace, name: 'other', uid: '00000000-0000-0000-0000-000000000001' },
      ),
    ).rejects.toThrow(/controlled by Domain raced/);
  });

  it('retries a Mailbox declared before its Domain with backoff until the Domain exists', async () => {
    const domainName = `late-${Date.now().toString(36)}.test`;
    await env.create('Mailbox', 'early', { address: `early@${domainName}` });
    await waitFor(
      'DomainNotFound',
      async () => readyCondition(await env.get('Mailbox', 'early'))?.reason === 'DomainNotFound',
    );
    await env.create('Domain', 'late', { domain: domainName });
    await env.ready('Mailbox', 'early');
  });
});
