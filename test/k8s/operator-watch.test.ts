import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { applyCrds } from './support/crds.js';
import { startCluster, type TestCluster } from './support/cluster.js';
import { operatorEnv, waitFor, type OperatorEnv } from './support/fixture.js';

// Watches break in production (API server upgrades, idle timeouts, compaction). This file runs
// its own API server so it can restart it without disturbing the other files. The Lease is long
// here, so the informers (not a new leadership term) must recover by themselves.

const shared = inject('k8sCluster');
let own: TestCluster | null = null;
let env: OperatorEnv;
const domainName = `watch-${Date.now().toString(36)}.test`;

beforeAll(async () => {
  if (shared.mode !== 'kubeconfig') {
    own = await startCluster();
    if (own.mode === 'real') await applyCrds(own.kubeconfigPath);
  }
  env = await operatorEnv({
    cluster: own ?? shared,
    operator: { timings: { leaseDurationMs: 60_000, renewDeadlineMs: 45_000, retryPeriodMs: 1_000 } },
  });
  await waitFor('a leader', async () => env.operators[0]!.isLeader);
  await env.create('Domain', 'watched', { domain: domainName });
  await env.ready('Domain', 'watched');
});
afterAll(async () => {
  await env?.close();
  await own?.stop();
});

describe(`watch restarts [${shared.mode}]`, () => {
  it.skipIf(shared.mode === 'kubeconfig')(
    'restarts its watches after the API server restarts and keeps reconciling',
    async () => {
      const op = env.operators[0]!;
      const source = op.source!;
      const restartsBefore = source.mailboxes.stats.restarts + source.domains.stats.restarts;
      await own!.restart!();
      await env.create('Mailbox', 'after-restart', { address: `after@${domainName}` });
      await env.ready('Mailbox', 'after-restart', 60_000);
      expect(source.mailboxes.stats.restarts + source.domains.stats.restarts).toBeGreaterThan(restartsBefore);
      expect(op.source).toBe(source); // the same leadership term: the informers recovered themselves
      expect(op.stats.terms).toBe(1);
    },
  );

  it('relists after 410 Gone (a resourceVersion too old) and sees what changed meanwhile', async () => {
    const source = env.operators[0]!.source!;
    const relistsBefore = source.mailboxes.stats.relists;
    await source.mailboxes.reconnectFrom('1', async () => {
      await env.create('Mailbox', 'while-away', { address: `away@${domainName}` });
    });
    await env.ready('Mailbox', 'while-away');
    expect(source.mailboxes.stats.relists).toBeGreaterThan(relistsBefore);
  });
});
