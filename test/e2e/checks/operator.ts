import type { E2eEnv } from '../support/environment.js';
import { figure } from '../support/figures.js';
import { apply, kubectl, kubectlJson, podsOf, waitFor } from '../support/kubectl.js';

const SUITE = 'operator';
const GROUP = 'mailbox-service.dev/v1alpha1';
export const DOMAIN = 'e2e.test';

export interface Identity {
  address: string;
  token: string;
}

const mailbox = (name: string, address: string) => ({
  apiVersion: GROUP,
  kind: 'Mailbox',
  metadata: { name },
  spec: { address, displayName: name },
});

async function readyCondition(env: E2eEnv, kind: string, name: string): Promise<boolean> {
  const r = await kubectl(['-n', env.namespace, 'get', kind, name, '-o', 'json'], { allowFail: true });
  if (!r.ok) return false;
  const o = JSON.parse(r.stdout);
  return (o.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
}

async function tokenOf(env: E2eEnv, name: string): Promise<string> {
  const s = await kubectlJson(['-n', env.namespace, 'get', 'secret', `${name}-mailbox-token`]);
  return Buffer.from(s.data.accessToken, 'base64').toString('utf8');
}

/** Applies a Mailbox with kubectl and waits for READY True and its token Secret; the time it took. */
export async function applyMailbox(
  env: E2eEnv,
  name: string,
  timeoutMs = 60_000,
): Promise<{ id: Identity; ms: number }> {
  const started = Date.now();
  const address = `${name}@${DOMAIN}`;
  await apply(env.namespace, [mailbox(name, address)]);
  await waitFor(`Mailbox ${name} Ready`, () => readyCondition(env, 'mailbox', name), timeoutMs);
  const token = await waitFor(`Secret ${name}-mailbox-token`, () => tokenOf(env, name), timeoutMs);
  return { id: { address, token }, ms: Date.now() - started };
}

/** A Domain and two Mailboxes applied with kubectl, reconciled into Secrets. */
export async function declareResources(env: E2eEnv): Promise<{ agent: Identity; peer: Identity }> {
  const started = Date.now();
  await apply(env.namespace, [
    { apiVersion: GROUP, kind: 'Domain', metadata: { name: 'e2e-test' }, spec: { domain: DOMAIN } },
  ]);
  await waitFor('Domain Ready', () => readyCondition(env, 'domain', 'e2e-test'), 60_000);
  const secrets = await kubectlJson(['-n', env.namespace, 'get', 'secrets']);
  const names = secrets.items.map((s: any) => s.metadata.name);
  const agent = await applyMailbox(env, 'agent');
  const peer = await applyMailbox(env, 'peer');
  const ok = names.includes('e2e-test-domain-token') && names.includes('e2e-test-dkim');
  figure({
    suite: SUITE,
    name: 'Domain + 2 Mailboxes applied with kubectl → READY True and token/DKIM Secrets (s)',
    value: ok ? Math.round((Date.now() - started) / 100) / 10 : `missing secrets: ${names.join(',')}`,
    target: '≤ 60 s',
    pass: ok,
  });
  return { agent: agent.id, peer: peer.id };
}

/** A Job that mounts the Mailbox's token Secret and calls the api Service with it. */
export async function tokenSecretJob(env: E2eEnv): Promise<void> {
  const script = `
    const token = require('fs').readFileSync('/token/accessToken', 'utf8').trim();
    fetch('http://${env.name('api')}/api/messages?limit=1', { headers: { authorization: 'Bearer ' + token } })
      .then(async (r) => { console.log('status', r.status, (await r.text()).slice(0, 200)); process.exit(r.status === 200 ? 0 : 1); })
      .catch((e) => { console.error(e); process.exit(2); });`;
  await apply(env.namespace, [
    {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'token-consumer' },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            securityContext: { runAsNonRoot: true, runAsUser: 1000 },
            containers: [
              {
                name: 'client',
                image: env.image,
                imagePullPolicy: 'IfNotPresent',
                command: ['node', '-e', script],
                securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
                volumeMounts: [{ name: 'token', mountPath: '/token', readOnly: true }],
              },
            ],
            volumes: [{ name: 'token', secret: { secretName: 'agent-mailbox-token' } }],
          },
        },
      },
    },
  ]);
  const done = await waitFor(
    'Job token-consumer finished',
    async () => {
      const j = await kubectlJson(['-n', env.namespace, 'get', 'job', 'token-consumer']);
      return j.status.succeeded ? 'succeeded' : j.status.failed ? 'failed' : undefined;
    },
    90_000,
    1000,
  );
  const logs = (await kubectl(['-n', env.namespace, 'logs', 'job/token-consumer'], { allowFail: true })).stdout;
  const status = /status (\d+)/.exec(logs)?.[1] ?? logs.trim().slice(0, 80);
  figure({
    suite: SUITE,
    name: 'pod mounting agent-mailbox-token → GET /api/messages via the api Service',
    value: `${done}, HTTP ${status}`,
    target: 'succeeded, HTTP 200',
    pass: done === 'succeeded' && status === '200',
  });
}

const holder = async (env: E2eEnv) =>
  (await kubectlJson(['-n', env.namespace, 'get', 'lease', env.name('operator')])).spec.holderIdentity ?? '';

/** The leader's pod deleted: a standby holds the Lease within its 15 s, and a new Mailbox is reconciled. */
export async function leaderFailover(env: E2eEnv): Promise<void> {
  const before = await holder(env);
  const pods = await podsOf(env.namespace, 'app.kubernetes.io/component=operator');
  const leader = pods.find((p) => before.startsWith(`${p.name}-`));
  if (!leader) throw new Error(`lease holder ${before} is none of ${pods.map((p) => p.name).join(', ')}`);
  const started = Date.now();
  await kubectl(['-n', env.namespace, 'delete', 'pod', leader.name, '--wait=false']);
  const next = await waitFor(
    'a new Lease holder',
    async () => {
      const h = await holder(env);
      return h && h !== before && !h.startsWith(`${leader.name}-`) ? h : undefined;
    },
    60_000,
    200,
  );
  const takeover = (Date.now() - started) / 1000;
  figure({
    suite: SUITE,
    name: 'leader pod deleted → standby holds the Lease (s)',
    value: takeover,
    target: '≤ 15 s (lease duration)',
    pass: takeover <= 15,
  });
  const { ms } = await applyMailbox(env, 'after-failover', 60_000);
  figure({
    suite: SUITE,
    name: `Mailbox applied after failover reconciled by ${next.replace(/-[0-9a-f]{6}$/, '')} (s)`,
    value: Math.round(ms / 100) / 10,
    target: '≤ 30 s',
    pass: ms <= 30_000,
  });
}
