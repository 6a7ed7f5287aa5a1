import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { apply, kubectl, kubectlJson, waitFor } from './kubectl.js';
import { SINK_HTTP_PORT, SINK_SCRIPT, SINK_SMTP_PORT } from './sink.js';

// What `make e2e` installs around the chart, in its own fresh namespace: PostgreSQL and Redis (the
// images named by E2E_POSTGRES_IMAGE / E2E_REDIS_IMAGE), the SMTP sink the workers relay to, the
// three Secrets the chart reads, and a TLS Secret for SMTP signed by a throw-away CA.

export interface E2eEnv {
  namespace: string;
  release: string;
  image: string;
  /** Deployment/Service name of a component, e.g. name('api') = e2e-mailbox-service-api. */
  name(component: string): string;
  /** The CA that signed the SMTP certificate, and the name the certificate is for. */
  smtpCa: string;
  smtpHostname: string;
  /** Where PostgreSQL keeps its data on the node: it survives scaling the database to 0. */
  pgHostPath: string;
  pgImage: string;
}

export function describeEnv(): E2eEnv {
  const namespace = process.env.E2E_NAMESPACE ?? `mailbox-e2e-${randomBytes(3).toString('hex')}`;
  const release = 'e2e';
  return {
    namespace,
    release,
    image: process.env.E2E_IMAGE ?? 'localhost/mailbox-service:e2e',
    name: (component) => `${release}-mailbox-service-${component}`,
    smtpCa: '',
    smtpHostname: 'smtp.e2e.test',
    pgHostPath: `/var/tmp/mailbox-e2e/${namespace}`,
    pgImage: process.env.E2E_POSTGRES_IMAGE ?? 'postgres:15',
  };
}

const DB_PASSWORD = randomBytes(12).toString('hex');
const labels = (app: string) => ({ 'app.kubernetes.io/name': app, 'app.kubernetes.io/part-of': 'mailbox-e2e' });

function service(name: string, ports: Array<[string, number]>) {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, labels: labels(name) },
    spec: {
      selector: labels(name),
      ports: ports.map(([n, port]) => ({ name: n, port, targetPort: port })),
    },
  };
}

function deployment(name: string, pod: object) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: labels(name) },
    spec: {
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: labels(name) },
      template: { metadata: { labels: labels(name) }, spec: pod },
    },
  };
}

/** PostgreSQL, Redis and the SMTP sink, each a Deployment + Service. */
function backingServices(env: E2eEnv) {
  const pg = env.pgImage;
  const redis = process.env.E2E_REDIS_IMAGE ?? 'redis:7';
  const pgData = '/var/lib/postgresql/data';
  return [
    deployment('postgres', {
      // The data directory is a hostPath on the node so that scaling the database to 0 (the probe
      // check) keeps the schema; no PersistentVolume provisioner is assumed (the k8s-node has none).
      initContainers: [
        {
          name: 'chown',
          image: pg,
          imagePullPolicy: 'IfNotPresent',
          securityContext: { runAsUser: 0 },
          command: ['chown', 'postgres:postgres', pgData],
          volumeMounts: [{ name: 'data', mountPath: pgData }],
        },
      ],
      containers: [
        {
          name: 'postgres',
          image: pg,
          imagePullPolicy: 'IfNotPresent',
          env: [
            { name: 'POSTGRES_USER', value: 'mailbox' },
            { name: 'POSTGRES_PASSWORD', value: DB_PASSWORD },
            { name: 'POSTGRES_DB', value: 'mailbox' },
            { name: 'PGDATA', value: `${pgData}/pgdata` },
          ],
          ports: [{ containerPort: 5432 }],
          // A TCP check: pg_isready as an exec probe (1 s timeout) failed on this 2-core node under load
          // and took the Service's endpoint away from a healthy database.
          readinessProbe: { tcpSocket: { port: 5432 }, periodSeconds: 2, timeoutSeconds: 5, failureThreshold: 3 },
          // A fast shutdown (SIGINT, the official image's STOPSIGNAL): SIGTERM is PostgreSQL's "smart"
          // shutdown, which keeps serving the pools' open sessions until the grace period ends.
          lifecycle: { preStop: { exec: { command: ['sh', '-c', 'kill -INT 1; sleep 5'] } } },
          volumeMounts: [{ name: 'data', mountPath: pgData }],
        },
      ],
      volumes: [{ name: 'data', hostPath: { path: env.pgHostPath, type: 'DirectoryOrCreate' } }],
    }),
    service('postgres', [['postgres', 5432]]),
    deployment('redis', {
      containers: [
        {
          name: 'redis',
          image: redis,
          imagePullPolicy: 'IfNotPresent',
          ports: [{ containerPort: 6379 }],
          readinessProbe: { tcpSocket: { port: 6379 }, periodSeconds: 2 },
        },
      ],
    }),
    service('redis', [['redis', 6379]]),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'sink', labels: labels('sink') },
      data: { 'sink.mjs': SINK_SCRIPT },
    },
    deployment('sink', {
      securityContext: { runAsNonRoot: true, runAsUser: 1000 },
      containers: [
        {
          name: 'sink',
          image: env.image,
          imagePullPolicy: 'IfNotPresent',
          command: ['node', '/sink/sink.mjs'],
          ports: [{ containerPort: SINK_SMTP_PORT }, { containerPort: SINK_HTTP_PORT }],
          readinessProbe: { httpGet: { path: '/healthz', port: SINK_HTTP_PORT }, periodSeconds: 2, timeoutSeconds: 5 },
          securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
          volumeMounts: [{ name: 'script', mountPath: '/sink' }],
        },
      ],
      volumes: [{ name: 'script', configMap: { name: 'sink' } }],
    }),
    service('sink', [
      ['smtp', SINK_SMTP_PORT],
      ['http', SINK_HTTP_PORT],
    ]),
  ];
}

/** A CA and a certificate for env.smtpHostname, made with the openssl command line. */
function makeSmtpTls(hostname: string): { ca: string; crt: string; key: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'mbx-e2e-tls-'));
  try {
    const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
    ssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=mailbox-e2e CA']);
    ssl(['req', ...ec, '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', `/CN=${hostname}`]);
    writeFileSync(path.join(dir, 'ext.cnf'), `subjectAltName=DNS:${hostname}\n`);
    ssl(
      ['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial'].concat([
        '-out',
        'tls.crt',
        '-days',
        '2',
        '-extfile',
        'ext.cnf',
      ]),
    );
    const read = (f: string) => readFileSync(path.join(dir, f), 'utf8');
    return { ca: read('ca.crt'), crt: read('tls.crt'), key: read('tls.key') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const secret = (name: string, data: Record<string, string>, type = 'Opaque') => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name },
  type,
  stringData: data,
});

/** Namespace, backing services Ready, Secrets; returns env with the SMTP CA filled in. */
export async function prepareNamespace(env: E2eEnv): Promise<E2eEnv> {
  await kubectl(['create', 'namespace', env.namespace]);
  await kubectl(['label', 'namespace', env.namespace, 'app.kubernetes.io/part-of=mailbox-e2e']);
  await apply(env.namespace, backingServices(env));
  const tls = makeSmtpTls(env.smtpHostname);
  await apply(env.namespace, [
    secret('mailbox-database', { url: `postgres://mailbox:${DB_PASSWORD}@postgres:5432/mailbox` }),
    secret('mailbox-redis', { url: 'redis://redis:6379' }),
    secret('mailbox-server-key', { key: randomBytes(32).toString('hex') }),
    secret('smtp-tls', { 'tls.crt': tls.crt, 'tls.key': tls.key }, 'kubernetes.io/tls'),
  ]);
  for (const d of ['postgres', 'redis', 'sink'])
    await kubectl(['-n', env.namespace, 'rollout', 'status', `deploy/${d}`, '--timeout=180s'], { timeoutMs: 200_000 });
  return { ...env, smtpCa: tls.ca };
}

/** Production-like values: 2 replicas per role, leader election, SMTP TLS from a Secret, relay to the sink. */
export function chartValues(env: E2eEnv, extraConfig: Record<string, string> = {}) {
  const [repository, tag] = [env.image.slice(0, env.image.lastIndexOf(':')), env.image.split(':').pop()!];
  // HPAs off: this node has no metrics-server, and the checks need to know how many replicas run.
  const fixed = { replicas: 2, autoscaling: { enabled: false } };
  return {
    image: { repository, tag, pullPolicy: 'IfNotPresent' },
    // The API and Socket.IO as NodePorts: how a user reaches them without an Ingress controller.
    api: { ...fixed, service: { type: 'NodePort' } },
    realtime: { ...fixed, service: { type: 'NodePort' } },
    smtp: { ...fixed, hostname: env.smtpHostname, tls: { secretName: 'smtp-tls' } },
    worker: fixed,
    // Only this namespace: a second operator elsewhere on the cluster must not reconcile our resources.
    operator: { replicas: 2, watchNamespace: env.namespace },
    config: {
      SMTP_RELAY_URL: `smtp://sink.${env.namespace}.svc.cluster.local:${SINK_SMTP_PORT}`,
      // The relay is in the cluster, at a private address (the network-target rule, docs/api.md).
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      // A killed worker's job is due again after this lease (default 60 s).
      WORKER_LEASE: '15s',
      // The load checks send a few messages per second from one mailbox; not a rate-limit test.
      SEND_RATE_LIMIT_PER_MINUTE: '100000',
      ...extraConfig,
    },
  };
}

export async function waitForDeployments(env: E2eEnv, timeoutMs: number): Promise<any[]> {
  return waitFor(
    'every Deployment of the release Ready',
    async () => {
      const list = await kubectlJson([
        '-n',
        env.namespace,
        'get',
        'deploy',
        '-l',
        `app.kubernetes.io/instance=${env.release}`,
      ]);
      const ready = list.items.filter(
        (d: any) =>
          d.status.readyReplicas === d.spec.replicas &&
          d.status.updatedReplicas === d.spec.replicas &&
          (d.status.replicas ?? 0) === d.spec.replicas,
      );
      return list.items.length > 0 && ready.length === list.items.length ? list.items : undefined;
    },
    timeoutMs,
    1000,
  );
}
