import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chartValues, waitForDeployments, type E2eEnv } from '../support/environment.js';
import { figure } from '../support/figures.js';
import { helm, kubectl, kubectlJson, ROOT, sleep } from '../support/kubectl.js';

const SUITE = 'install';
export const CHART = path.join(ROOT, 'charts/mailbox-service');

export function valuesFile(env: E2eEnv, extraConfig: Record<string, string> = {}): string {
  const file = path.join(tmpdir(), `${env.namespace}-values.json`);
  writeFileSync(file, JSON.stringify(chartValues(env, extraConfig), null, 2));
  return file;
}

/**
 * `helm install --wait`, watching the pre-install migration Job while it exists (the hook deletes
 * it on success); the Job's "Completed" Event stays as evidence either way.
 */
export async function installChart(env: E2eEnv): Promise<void> {
  const seen = { created: false, succeeded: false };
  let installing = true;
  const watcher = (async () => {
    while (installing) {
      const job = await kubectl(['-n', env.namespace, 'get', 'job', env.name('migrate'), '-o', 'json'], {
        allowFail: true,
      });
      if (job.ok) {
        seen.created = true;
        if ((JSON.parse(job.stdout).status?.succeeded ?? 0) > 0) seen.succeeded = true;
      }
      await sleep(1500);
    }
  })();
  const started = Date.now();
  const res = await helm([
    'install',
    env.release,
    CHART,
    '-n',
    env.namespace,
    '-f',
    valuesFile(env),
    '--wait',
    '--timeout',
    '8m',
  ]);
  installing = false;
  await watcher;
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  figure({
    suite: SUITE,
    name: 'helm install --wait succeeded (s)',
    value: res.ok ? seconds : `failed: ${res.stderr.trim().slice(0, 200)}`,
    target: 'succeeds',
    pass: res.ok,
  });
  const events = await kubectlJson([
    '-n',
    env.namespace,
    'get',
    'events',
    '--field-selector',
    `involvedObject.kind=Job,involvedObject.name=${env.name('migrate')}`,
  ]);
  const completedEvent = events.items.some((e: any) => e.reason === 'Completed');
  figure({
    suite: SUITE,
    name: 'migration hook Job completed before the Deployments (Job seen / succeeded / Completed event)',
    value: `${seen.created} / ${seen.succeeded || completedEvent} / ${completedEvent}`,
    target: 'true / true / true',
    pass: seen.created && (seen.succeeded || completedEvent) && completedEvent,
  });
  if (!res.ok) throw new Error('helm install failed; nothing else can be checked');
}

export async function checkDeployments(env: E2eEnv): Promise<void> {
  const list = await waitForDeployments(env, 120_000).catch(
    async () =>
      (await kubectlJson(['-n', env.namespace, 'get', 'deploy', '-l', `app.kubernetes.io/instance=${env.release}`]))
        .items,
  );
  const ready = list.filter((d: any) => d.status.readyReplicas === d.spec.replicas && d.spec.replicas >= 2);
  figure({
    suite: SUITE,
    name: 'Deployments Ready with 2 replicas (api, realtime, smtp, worker, operator)',
    value: `${ready.length}/${list.length}`,
    target: '5/5',
    pass: ready.length === 5 && list.length === 5,
  });
}

/** The image as it runs: size on the node, uid, read-only root, no dev dependency, start to Ready. */
export async function checkImage(env: E2eEnv): Promise<void> {
  const nodes = await kubectlJson(['get', 'nodes']);
  const image = nodes.items
    .flatMap((n: any) => n.status.images ?? [])
    .find((i: any) => (i.names ?? []).some((n: string) => n.endsWith(env.image.replace(/^docker\.io\//, ''))));
  figure({
    suite: 'image',
    name: 'image size on the node (MB)',
    value: image ? Math.round(image.sizeBytes / 1e6) : 'unknown',
    target: 'reported',
    pass: Boolean(image),
  });
  const pods = await kubectlJson([
    '-n',
    env.namespace,
    'get',
    'pods',
    '-l',
    `app.kubernetes.io/instance=${env.release}`,
  ]);
  const api = pods.items.find((p: any) => p.metadata.labels['app.kubernetes.io/component'] === 'api');
  const exec = (cmd: string[]) =>
    kubectl(['-n', env.namespace, 'exec', api.metadata.name, '--', ...cmd], { allowFail: true });
  const uid = (await exec(['id', '-u'])).stdout.trim();
  figure({ suite: 'image', name: 'container uid', value: uid, target: '1000 (non-root)', pass: uid === '1000' });
  const write = await exec(['touch', '/app/probe']);
  figure({
    suite: 'image',
    name: 'root filesystem writable',
    value: write.ok ? 'yes' : 'no',
    target: 'no (readOnlyRootFilesystem)',
    pass: !write.ok && /Read-only file system/i.test(write.stderr),
  });
  const unpacked = (await exec(['du', '-sxm', '/'])).stdout.split(/\s+/)[0];
  figure({
    suite: 'image',
    name: 'image unpacked (du -sxm / in the container, MB)',
    value: unpacked || 'unknown',
    target: 'reported',
    pass: Boolean(unpacked),
  });
  // Packages only dev dependencies need (package-lock marks them dev: true); a production
  // dependency's own @types are not among them.
  const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  const dev = Object.entries(lock.packages as Record<string, { dev?: boolean }>)
    .filter(([p, meta]) => meta.dev && /^node_modules\/(@[^/]+\/)?[^/]+$/.test(p))
    .map(([p]) => p.slice('node_modules/'.length));
  const probe = dev.map((d) => `[ -e /app/node_modules/${d} ] && echo ${d};`).join(' ');
  const leaked = (await exec(['sh', '-c', `${probe} true`])).stdout.split(/\s+/).filter(Boolean);
  figure({
    suite: 'image',
    name: `dev-only packages in the image (of ${dev.length} in package-lock)`,
    value: leaked.length ? leaked.join(' ') : 0,
    target: '= 0',
    pass: leaked.length === 0,
  });
  // Start time: container start → the process listening (its own log line), and → pod Ready
  // (probe periods included); the node's load average is in docs/kubernetes.md next to these.
  const seconds = (a: string, b: string) => (Date.parse(b) - Date.parse(a)) / 1000;
  const logs = (await kubectl(['-n', env.namespace, 'logs', api.metadata.name], { allowFail: true })).stdout;
  const listening = logs
    .split('\n')
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return null;
      }
    })
    .find((l) => l?.event === 'http.listening');
  const toListen = listening ? seconds(api.status.containerStatuses[0].state.running.startedAt, listening.ts) : NaN;
  const toReady = pods.items
    .filter((p: any) => p.status.containerStatuses?.[0]?.state?.running)
    .map((p: any) =>
      seconds(
        p.status.containerStatuses[0].state.running.startedAt,
        p.status.conditions.find((c: any) => c.type === 'Ready')?.lastTransitionTime ?? '',
      ),
    )
    .filter((n: number) => Number.isFinite(n));
  const slowest = toReady.length ? Math.max(...toReady) : NaN;
  const restarted = pods.items.filter((p: any) => (p.status.containerStatuses?.[0]?.restartCount ?? 0) > 0);
  figure({
    suite: 'image',
    name: 'start: api container start → listening / slowest pod start → Ready (s), restarts',
    value: `${Number.isFinite(toListen) ? toListen : 'unknown'} / ${Number.isFinite(slowest) ? slowest : 'unknown'}, ${restarted.length}`,
    target: 'no restart while starting (startupProbe: 180 s)',
    pass: Number.isFinite(toListen) && restarted.length === 0,
  });
}
