import { Api } from '../support/clients.js';
import { waitForDeployments, type E2eEnv } from '../support/environment.js';
import { figure } from '../support/figures.js';
import { kubectl, podsOf, sleep, waitFor, type Pod } from '../support/kubectl.js';

const SUITE = 'probes';
const ROLES = ['api', 'realtime', 'smtp', 'worker'];
/** Longer than liveness period × failureThreshold (10 s × 3): a liveness probe tied to the database would have restarted pods by then. */
const OUTAGE_MS = 45_000;

const release = (env: E2eEnv) => `app.kubernetes.io/instance=${env.release}`;

/**
 * The database scaled to 0: readiness of every role that needs it fails (they leave their
 * Services), liveness does not restart anything; scaled back, every pod is Ready again by itself.
 */
export async function databaseOutage(env: E2eEnv, apiBase: string, token: string): Promise<void> {
  const before = new Map((await podsOf(env.namespace, release(env))).map((p) => [p.name, p.restarts]));
  const started = Date.now();
  await kubectl(['-n', env.namespace, 'scale', 'deploy/postgres', '--replicas=0']);
  const appPods = async (): Promise<Pod[]> =>
    (await podsOf(env.namespace, release(env))).filter((p) => !p.name.includes('-operator-'));
  const unready = await waitFor(
    'every api/realtime/smtp/worker pod NotReady',
    async () => {
      const pods = await appPods();
      return pods.length > 0 && pods.every((p) => !p.ready) ? pods.length : undefined;
    },
    40_000,
    500,
  ).catch(() => 0);
  const notReadyAfter = (Date.now() - started) / 1000;
  const apiDuring = await new Api(apiBase, token)
    .call('GET', '/readyz')
    .catch((e) => ({ status: String(e.cause?.code ?? e) }));
  figure({
    suite: SUITE,
    name: `database scaled to 0 → every ${ROLES.join('/')} pod NotReady (s)`,
    value: unready ? notReadyAfter : 'some stayed Ready',
    target: '≤ 30 s (readiness 5 s × 3, 5 s timeout)',
    pass: unready > 0 && notReadyAfter <= 30,
  });
  await sleep(Math.max(0, OUTAGE_MS - (Date.now() - started)));
  const during = await podsOf(env.namespace, release(env));
  const restarts = during.reduce((n, p) => n + p.restarts - (before.get(p.name) ?? p.restarts), 0);
  figure({
    suite: SUITE,
    name: `container restarts during a ${OUTAGE_MS / 1000} s database outage (liveness independent of the database)`,
    value: restarts,
    target: '= 0',
    pass: restarts === 0,
  });
  figure({
    suite: SUITE,
    name: 'api Service during the outage (no Ready endpoint)',
    value: apiDuring.status,
    target: 'refused / 503',
    pass: apiDuring.status !== 200,
  });
  const back = Date.now();
  await kubectl(['-n', env.namespace, 'scale', 'deploy/postgres', '--replicas=1']);
  await kubectl(['-n', env.namespace, 'rollout', 'status', 'deploy/postgres', '--timeout=120s'], {
    timeoutMs: 130_000,
  });
  const recovered = await waitForDeployments(env, 120_000)
    .then(() => true)
    .catch(() => false);
  const ok = await waitFor(
    'GET /api/messages 200',
    async () => (await new Api(apiBase, token).call('GET', '/api/messages?limit=1')).status === 200,
    30_000,
  ).catch(() => false);
  figure({
    suite: SUITE,
    name: 'database back → every Deployment Ready and the API answering, no manual step (s)',
    value: recovered && ok ? (Date.now() - back) / 1000 : 'not recovered',
    target: '≤ 60 s',
    pass: recovered && Boolean(ok) && Date.now() - back <= 60_000,
  });
}
