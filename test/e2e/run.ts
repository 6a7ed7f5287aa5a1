import { smtpTarget, serviceAddress } from './support/clients.js';
import { describeEnv, prepareNamespace, type E2eEnv } from './support/environment.js';
import { allPassed, failedStep, printTable } from './support/figures.js';
import { apply, kubectl, kubectlJson, waitFor } from './support/kubectl.js';
import { httpChannel, mcpChannel, smtpChannels, type Reach } from './checks/channels.js';
import { rollingUpgrade, smtpPodKilled, workerKilledMidDelivery } from './checks/disruptions.js';
import { checkDeployments, checkImage, installChart } from './checks/install.js';
import { mcpEventStreams, mcpWebhookThroughRollout } from './checks/mcp-events.js';
import { declareResources, leaderFailover, tokenSecretJob, type Identity } from './checks/operator.js';
import { databaseOutage } from './checks/probes.js';
import { realtimeFanOut } from './checks/realtime.js';
import { uninstall } from './checks/uninstall.js';

// `make e2e` after the image is built and loaded (scripts/e2e.sh): a fresh namespace, PostgreSQL,
// Redis, the chart, every check in order, the table of figures, the namespace removed. KUBECONFIG
// names the cluster; E2E_KEEP=1 keeps the namespace for a look afterwards.

async function step(suite: string, name: string, fn: () => Promise<void>): Promise<void> {
  const t = Date.now();
  console.log(`\n== ${suite}: ${name}`);
  try {
    await fn();
  } catch (err) {
    failedStep(suite, name, err);
  }
  console.log(`   (${Math.round((Date.now() - t) / 1000)} s)`);
}

/** The hostPath PostgreSQL used, removed from the node by a pod (the node may not be this machine). */
async function removeDatabaseDirectory(env: E2eEnv): Promise<void> {
  await kubectl(['-n', env.namespace, 'scale', 'deploy/postgres', '--replicas=0'], { allowFail: true });
  const parent = env.pgHostPath.slice(0, env.pgHostPath.lastIndexOf('/'));
  await apply(env.namespace, [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'remove-database-directory' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'rm',
            image: env.pgImage,
            imagePullPolicy: 'IfNotPresent',
            securityContext: { runAsUser: 0 },
            command: ['rm', '-rf', `/host/${env.namespace}`],
            volumeMounts: [{ name: 'host', mountPath: '/host' }],
          },
        ],
        volumes: [{ name: 'host', hostPath: { path: parent } }],
      },
    },
  ]);
  await waitFor(
    'the database directory removed',
    async () =>
      (await kubectlJson(['-n', env.namespace, 'get', 'pod', 'remove-database-directory'])).status.phase ===
      'Succeeded',
    60_000,
    1000,
  ).catch((err) => console.warn(String(err)));
}

async function main(): Promise<number> {
  const started = Date.now();
  let env = describeEnv();
  console.log(
    `make e2e: namespace ${env.namespace}, image ${env.image}, kubeconfig ${process.env.KUBECONFIG ?? '(default)'}`,
  );
  try {
    env = await prepareNamespace(env);
    await installChart(env);
    let reach: Reach | null = null;
    let ids: { agent: Identity; peer: Identity } | null = null;
    await step('install', 'Deployments and image', async () => {
      await checkDeployments(env);
      await checkImage(env);
    });
    await step('operator', 'Domain and Mailboxes', async () => {
      ids = await declareResources(env);
      reach = {
        apiBase: `http://${await serviceAddress(env, env.name('api'), 'http')}`,
        submission: smtpTarget(await serviceAddress(env, env.name('smtp'), 'submission'), env),
        mx: smtpTarget(await serviceAddress(env, env.name('smtp'), 'smtp'), env),
      };
      console.log(
        `   api ${reach.apiBase}, submission ${reach.submission.host}:${reach.submission.port}, mx ${reach.mx.host}:${reach.mx.port}`,
      );
    });
    if (!reach || !ids) throw new Error('no mailboxes: the remaining checks need them');
    const r: Reach = reach;
    const { agent, peer } = ids as { agent: Identity; peer: Identity };
    await step('operator', 'token Secret mounted by a pod', () => tokenSecretJob(env));
    await step('channels', 'HTTP', () => httpChannel(r, agent, peer));
    await step('channels', 'SMTP', () => smtpChannels(r, agent, peer));
    await step('channels', 'MCP', () => mcpChannel(r, agent, peer));
    await step('mcp events', 'events/stream on each api replica', () => mcpEventStreams(env, r, agent));
    await step('mcp events', 'webhook subscription through kubectl rollout restart of the api', () =>
      mcpWebhookThroughRollout(env, r, agent),
    );
    await step('realtime', 'fan-out across replicas', () => realtimeFanOut(env, r, agent));
    await step('probes', 'database outage', () => databaseOutage(env, r.apiBase, agent.token));
    await step('operator', 'leader failover', () => leaderFailover(env));
    await step('upgrade', 'rolling helm upgrade under load', () => rollingUpgrade(env, r, agent, peer));
    await step('smtp kill', 'smtp pod deleted --grace-period=0', () => smtpPodKilled(env, r, agent, peer));
    await step('worker kill', 'worker killed mid-delivery', () => workerKilledMidDelivery(env, r, agent));
    await step('uninstall', 'helm uninstall', () => uninstall(env));
  } catch (err) {
    failedStep('e2e', 'setup', err);
  } finally {
    if (process.env.E2E_KEEP) console.log(`E2E_KEEP set: namespace ${env.namespace} kept`);
    else {
      await removeDatabaseDirectory(env).catch((err) => console.warn(String(err)));
      await kubectl(['delete', 'namespace', env.namespace, '--wait=true', '--timeout=180s'], {
        allowFail: true,
        timeoutMs: 200_000,
      });
    }
  }
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  printTable(`make e2e figures (${minutes} min, namespace ${env.namespace})`);
  return allPassed() ? 0 : 1;
}

process.exitCode = await main();
