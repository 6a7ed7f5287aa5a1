import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubeRequest } from './support/raw-client.js';
import { loadKubeConfig } from '../../operator/src/kube.js';
import { FAST_LEASE, operatorEnv, waitFor, type OperatorEnv } from './support/fixture.js';
import type { OperatorHandle } from '../../operator/src/operator.js';

// Two operator replicas on one Lease (4 s here, 15 s by default): one leads and reconciles, the
// other stands by; it takes over when the leader dies (after the Lease expires) or shuts down
// (at once: the Lease is released).

const cluster = inject('k8sCluster');
let env: OperatorEnv;
beforeAll(async () => {
  env = await operatorEnv({ replicas: 2, operator: { timings: FAST_LEASE } });
});
afterAll(async () => {
  await env?.close();
});

const leaders = () => env.operators.filter((op) => op.isLeader);
async function retire(op: OperatorHandle, release: boolean): Promise<void> {
  env.operators.splice(env.operators.indexOf(op), 1);
  await op.close({ release });
}

describe(`leader election [${cluster.mode}]`, () => {
  it('elects exactly one leader and records it in the Lease with MicroTime timestamps', async () => {
    const [leader] = await waitFor('a leader', async () => (leaders().length === 1 ? leaders() : null));
    for (let i = 0; i < 15; i++) {
      expect(leaders()).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 100));
    }
    const lease = await kubeRequest(
      loadKubeConfig(cluster.kubeconfigPath),
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${env.namespace}/leases/mailbox-operator`,
    );
    expect(lease.body.spec).toMatchObject({ holderIdentity: leader!.identity, leaseDurationSeconds: 4 });
    expect(lease.body.spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(lease.body.spec.acquireTime).toMatch(/\.\d{6}Z$/);
  });

  it('only the leader reconciles', async () => {
    await env.create('Domain', 'led', { domain: `led-${Date.now().toString(36)}.test` });
    await env.ready('Domain', 'led');
    const [leader] = leaders();
    const standby = env.operators.find((op) => !op.isLeader)!;
    // Status is written inside the reconcile, so the count may trail the Ready condition a moment.
    await waitFor('the leader counting its reconcile', async () => leader!.stats.reconciles > 0, 5_000);
    expect(standby.stats.reconciles).toBe(0);
    expect(standby.source).toBeNull(); // no informers, no queue while standing by
  });

  it('a standby takes over after the Lease expires when the leader dies holding it', async () => {
    const [leader] = leaders();
    const standby = env.operators.find((op) => !op.isLeader)!;
    const died = Date.now();
    await retire(leader!, false);
    await waitFor('the standby leading', async () => standby.isLeader, 15_000);
    // Not before the dead leader's Lease ran out (4 s from its last renewal).
    expect(Date.now() - died).toBeGreaterThanOrEqual(FAST_LEASE.leaseDurationMs - FAST_LEASE.retryPeriodMs * 2 - 500);
    await env.create('Mailbox', 'after-failover', {
      address: `after@${(await env.get('Domain', 'led'))!.spec!.domain as string}`,
    });
    await env.ready('Mailbox', 'after-failover');
    await waitFor('the new leader counting its reconciles', async () => standby.stats.reconciles > 0, 5_000);
  });

  it('a graceful shutdown releases the Lease, so the next replica leads at once', async () => {
    const third = await env.startReplica({ timings: FAST_LEASE });
    const [leader] = leaders();
    expect(third.isLeader).toBe(false);
    const stopped = Date.now();
    await retire(leader!, true);
    await waitFor('the new replica leading', async () => third.isLeader, 10_000);
    expect(Date.now() - stopped).toBeLessThan(FAST_LEASE.leaseDurationMs);
  });
});
