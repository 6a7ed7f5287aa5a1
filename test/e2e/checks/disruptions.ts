import { Api } from '../support/clients.js';
import { waitForDeployments, type E2eEnv } from '../support/environment.js';
import { figure, zero } from '../support/figures.js';
import { helm, kubectl, kubectlJson, podsOf, portForward, sleep, waitFor } from '../support/kubectl.js';
import { lostOf, startLoad, summarize } from '../support/load.js';
import { SINK_HTTP_PORT } from '../support/sink.js';
import type { Reach } from './channels.js';
import { CHART, valuesFile } from './install.js';
import type { Identity } from './operator.js';

// Disruptions under load: a rolling `helm upgrade`, an smtp pod killed outright, a worker killed
// while its relay holds the final reply.

const release = (env: E2eEnv) => `app.kubernetes.io/instance=${env.release}`;

/** `helm upgrade` with one changed value rolls all five Deployments while HTTP and SMTP load runs. */
export async function rollingUpgrade(env: E2eEnv, reach: Reach, agent: Identity, peer: Identity): Promise<void> {
  const before = new Set((await podsOf(env.namespace, release(env))).map((p) => p.name));
  const load = startLoad({ apiBase: reach.apiBase, smtp: reach.submission, from: agent, to: peer.address });
  await sleep(3000);
  const started = Date.now();
  const res = await helm([
    'upgrade',
    env.release,
    CHART,
    '-n',
    env.namespace,
    '-f',
    valuesFile(env, { E2E_REVISION: '2' }),
    '--wait',
    '--timeout',
    '8m',
  ]);
  await waitForDeployments(env, 180_000).catch(() => undefined);
  // The load runs until every old pod is gone: their preStop sleeps and drains are what is tested.
  await waitFor(
    'every pod of before the upgrade gone',
    async () => !(await podsOf(env.namespace, release(env))).some((p) => before.has(p.name)),
    180_000,
    1000,
  ).catch(() => undefined);
  const rolled = Date.now() - started;
  await sleep(3000);
  const { http, smtp } = await load.stop();
  const after = await podsOf(env.namespace, release(env));
  const deployments = (await kubectlJson(['-n', env.namespace, 'get', 'deploy', '-l', release(env)])).items;
  const replaced = deployments.filter((d: any) => {
    const component = d.metadata.labels['app.kubernetes.io/component'];
    const pods = after.filter((p) => p.name.startsWith(`${env.name(component)}-`));
    return pods.length > 0 && pods.every((p) => !before.has(p.name) && !p.deleting);
  });
  figure({
    suite: 'upgrade',
    name: 'helm upgrade (one config value changed) → Deployments whose pods were all replaced (s)',
    value: `${replaced.length}/${deployments.length}${res.ok ? ` in ${Math.round(rolled / 1000)} s` : `, helm: ${res.stderr.slice(0, 120)}`}`,
    target: '5/5',
    pass: res.ok && replaced.length === 5 && deployments.length === 5,
  });
  figure({
    suite: 'upgrade',
    name: `failed HTTP requests during the roll (of ${http.requests}, list + send every 250 ms)`,
    value: http.failures.length ? `${http.failures.length}: ${summarize(http.failures).slice(0, 160)}` : 0,
    target: '= 0',
    pass: http.failures.length === 0 && http.requests > 10,
  });
  figure({
    suite: 'upgrade',
    name: `failed SMTP submissions during the roll (of ${smtp.requests}, one every 500 ms)`,
    value: smtp.failures.length ? `${smtp.failures.length}: ${summarize(smtp.failures).slice(0, 160)}` : 0,
    target: '= 0',
    pass: smtp.failures.length === 0 && smtp.requests > 5,
  });
  const acked = [...http.acknowledged, ...smtp.acknowledged];
  const lost = await lostOf(reach.apiBase, agent.token, acked);
  zero('upgrade', `acknowledged mail lost (of ${acked.length} acknowledged)`, lost.length);
}

/** An smtp pod deleted with --grace-period=0 while 4 clients submit: nothing acknowledged is lost. */
export async function smtpPodKilled(env: E2eEnv, reach: Reach, agent: Identity, peer: Identity): Promise<void> {
  const load = startLoad({ smtp: reach.submission, from: agent, to: peer.address, smtpClients: 4, smtpEveryMs: 200 });
  await sleep(4000);
  const victim = (await podsOf(env.namespace, 'app.kubernetes.io/component=smtp')).find((p) => p.ready)!;
  await kubectl(['-n', env.namespace, 'delete', 'pod', victim.name, '--grace-period=0', '--force'], {
    allowFail: true,
  });
  await sleep(8000);
  const { smtp } = await load.stop();
  const lost = await lostOf(reach.apiBase, agent.token, smtp.acknowledged);
  zero(
    'smtp kill',
    `acknowledged mail lost, smtp pod deleted --grace-period=0 under 4 submitters (of ${smtp.acknowledged.length})`,
    lost.length,
  );
  figure({
    suite: 'smtp kill',
    name: 'submissions refused or cut (the client sees it and may retry; not acknowledged)',
    value: smtp.failures.length ? `${smtp.failures.length}: ${summarize(smtp.failures).slice(0, 120)}` : 0,
    target: 'reported',
    pass: true,
  });
}

/**
 * A worker killed (--grace-period=0) while the relay sink holds its final reply: after the job's
 * lease (WORKER_LEASE 15 s) another worker delivers it; the message ends `delivered`, at the sink
 * once or as a counted duplicate.
 */
export async function workerKilledMidDelivery(env: E2eEnv, reach: Reach, agent: Identity): Promise<void> {
  const sink = await portForward(env.namespace, 'svc/sink', SINK_HTTP_PORT);
  try {
    const sinkGet = async (p: string) => (await fetch(`http://127.0.0.1:${sink.port}${p}`)).json() as Promise<any>;
    const api = new Api(reach.apiBase, agent.token);
    const sent = await api.send('someone@relay.example', `e2e [hold] ${Date.now()}`, 'kill the worker delivering me');
    if (sent.status !== 202) throw new Error(`send answered ${sent.status}`);
    const held = await waitFor(
      'the sink holding a delivery',
      () => sinkGet('/holding').then((h) => h ?? undefined),
      30_000,
    );
    const workers = await podsOf(env.namespace, 'app.kubernetes.io/component=worker');
    const victim = workers.find((w) => w.ip === held.client);
    if (!victim)
      throw new Error(`held client ${held.client} is no worker pod (${workers.map((w) => w.ip).join(', ')})`);
    await kubectl(['-n', env.namespace, 'delete', 'pod', victim.name, '--grace-period=0', '--force'], {
      allowFail: true,
    });
    const killedAt = Date.now();
    const final = await waitFor(
      'the message delivered',
      async () => {
        const m = await api.call('GET', `/api/messages/${sent.data.messageId}`);
        return m.data?.deliveryStatus === 'delivered' || m.data?.deliveryStatus === 'failed'
          ? m.data.deliveryStatus
          : undefined;
      },
      120_000,
      1000,
    ).catch(() => 'still pending after 120 s');
    const copies = ((await sinkGet('/messages')) as any[]).filter((m) =>
      m.messageId.includes(sent.data.messageId),
    ).length;
    figure({
      suite: 'worker kill',
      name: `worker ${victim.name.replace(/.*-/, '…')} killed mid-delivery → final status, copies at the relay (s after kill)`,
      value: `${final}, ${copies} cop${copies === 1 ? 'y' : 'ies'} (${copies - 1} duplicate) in ${Math.round((Date.now() - killedAt) / 1000)} s`,
      target: 'delivered, 1 copy or a counted duplicate',
      pass: final === 'delivered' && copies >= 1 && copies <= 2,
    });
  } finally {
    sink.stop();
  }
}
