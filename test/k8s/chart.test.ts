import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadKubeConfig } from '../../operator/src/kube.js';
import { crdDocuments } from './support/crds.js';
import { CHART, helm, helmAvailable, named, ofKind, render } from './support/helm.js';
import { checkObject, fetchOpenApi, type OpenApi } from './support/openapi-check.js';
import { createObject, kubeRequest } from './support/raw-client.js';

// The chart through a real helm 3.10: lint --strict and template with several value sets, the
// rendered objects checked against the Kubernetes OpenAPI schema of the API server, and, against
// the real server, rendered with its capabilities and created with a server-side dry run.

const cluster = inject('k8sCluster');
const VALUE_SETS: Array<{ name: string; files: string[] }> = [
  { name: 'defaults', files: [] },
  { name: 'namespaced operator, TLS, ingress', files: ['namespaced-operator.yaml'] },
  { name: 'fixed replicas, named peers', files: ['fixed-replicas.yaml'] },
  { name: 'operator only', files: ['operator-only.yaml'] },
];
const valuesArgs = (files: string[]) =>
  files.flatMap((f) => ['-f', path.join(CHART, '../../test/k8s/chart-values', f)]);
const onServer = cluster.mode !== 'stand-in';
const APP = ['api', 'realtime', 'smtp', 'worker'];
/** Namespaces the dry runs needed and this file created; removed at the end (on a real cluster too). */
const createdNamespaces: string[] = [];
async function ensureNamespace(name: string): Promise<void> {
  const res = await kubeRequest(loadKubeConfig(cluster.kubeconfigPath), 'POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name },
  });
  if (res.status === 201) createdNamespaces.push(name);
}
afterAll(async () => {
  if (!onServer) return;
  for (const name of createdNamespaces)
    await kubeRequest(loadKubeConfig(cluster.kubeconfigPath), 'DELETE', `/api/v1/namespaces/${name}`);
});

describe.skipIf(!helmAvailable)('helm chart (real helm 3.10)', () => {
  it.each(VALUE_SETS)('helm lint --strict passes with $name', async ({ files }) => {
    const res = await helm(['lint', '--strict', CHART, ...valuesArgs(files)]);
    expect(res.ok, res.stdout + res.stderr).toBe(true);
  });

  it.each([
    {
      name: 'an SMTP grace period not longer than preStop + close timeout',
      set: ['smtp.terminationGracePeriodSeconds=15'],
      error: /smtp.terminationGracePeriodSeconds \(15\) must exceed/,
    },
    {
      name: 'an API grace period not longer than preStop + HTTP drain timeout',
      set: ['api.terminationGracePeriodSeconds=12'],
      error: /api.terminationGracePeriodSeconds \(12\) must exceed api.preStopSleepSeconds \+ api.drainTimeoutSeconds/,
    },
    { name: 'an unknown value (typo)', set: ['databse.existingSecret=x'], error: /databse|Additional property/ },
    { name: 'no database Secret', set: ['database.existingSecret='], error: /existingSecret/ },
    { name: 'an invalid watch namespace', set: ['operator.watchNamespace=Bad_NS'], error: /watchNamespace/ },
  ])('refuses $name', async ({ set, error }) => {
    const res = await helm(['template', 'mbx', CHART, ...set.flatMap((s) => ['--set', s])]);
    expect(res.ok).toBe(false);
    expect(res.stderr).toMatch(error);
  });

  describe('defaults', () => {
    let objects: any[];
    beforeAll(async () => {
      objects = await render([]);
    });

    it('runs each role as its own Deployment of the one image, non-root and read-only, with probes and resources', () => {
      const deployments = ofKind(objects, 'Deployment');
      expect(deployments.map((d) => d.metadata.name).sort()).toEqual([
        'mbx-mailbox-service-api',
        'mbx-mailbox-service-operator',
        'mbx-mailbox-service-realtime',
        'mbx-mailbox-service-smtp',
        'mbx-mailbox-service-worker',
      ]);
      expect(new Set(deployments.map((d) => d.spec.template.spec.containers[0].image))).toEqual(
        new Set(['ghcr.io/mailbox-service/mailbox-service:0.1.0']),
      );
      for (const d of deployments) {
        const pod = d.spec.template.spec;
        const c = pod.containers[0];
        expect(pod.securityContext, d.metadata.name).toMatchObject({
          runAsNonRoot: true,
          runAsUser: 1000,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(c.securityContext, d.metadata.name).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(c.livenessProbe.httpGet.path, d.metadata.name).toBe('/healthz');
        expect(c.readinessProbe, d.metadata.name).toBeDefined();
        expect(c.startupProbe, d.metadata.name).toBeDefined();
        expect(Object.keys(c.resources).sort(), d.metadata.name).toEqual(['limits', 'requests']);
        const env = Object.fromEntries(c.env.map((e: any) => [e.name, e]));
        expect(env.DATABASE_URL.valueFrom.secretKeyRef).toEqual({ name: 'mailbox-database', key: 'url' });
        expect(env.REDIS_URL.valueFrom.secretKeyRef).toEqual({ name: 'mailbox-redis', key: 'url' });
        expect(env.MAILBOX_SECRET_KEY.valueFrom.secretKeyRef).toEqual({ name: 'mailbox-server-key', key: 'key' });
      }
      for (const role of APP) {
        const d = named(objects, 'Deployment', `mbx-mailbox-service-${role}`);
        expect(d.spec.template.spec.containers[0].args).toEqual(['serve', '--roles', role]);
        expect(d.spec.template.spec.automountServiceAccountToken).toBe(false);
        expect(d.spec.replicas).toBeUndefined(); // the HPA owns it
      }
      expect(
        named(objects, 'Deployment', 'mbx-mailbox-service-operator').spec.template.spec.containers[0].args,
      ).toEqual(['operator']);
    });

    it('gives every role a PodDisruptionBudget and the scaled roles a HorizontalPodAutoscaler', () => {
      expect(
        ofKind(objects, 'PodDisruptionBudget')
          .map((p) => p.metadata.name.replace('mbx-mailbox-service-', ''))
          .sort(),
      ).toEqual(['api', 'operator', 'realtime', 'smtp', 'worker']);
      expect(ofKind(objects, 'PodDisruptionBudget').every((p) => p.apiVersion === 'policy/v1')).toBe(true);
      const hpas = ofKind(objects, 'HorizontalPodAutoscaler');
      expect(hpas.map((h) => h.spec.scaleTargetRef.name.replace('mbx-mailbox-service-', '')).sort()).toEqual([
        'api',
        'realtime',
        'smtp',
        'worker',
      ]);
      expect(hpas.every((h) => h.apiVersion === 'autoscaling/v2')).toBe(true);
    });

    it('exposes SMTP on 587 and 25 through a LoadBalancer, stops accepting before SIGTERM, and outlasts the close timeout', () => {
      const svc = named(objects, 'Service', 'mbx-mailbox-service-smtp');
      expect(svc.spec).toMatchObject({ type: 'LoadBalancer', externalTrafficPolicy: 'Local' });
      expect(svc.spec.ports.map((p: any) => [p.port, p.targetPort])).toEqual([
        [587, 'submission'],
        [25, 'smtp'],
      ]);
      const pod = named(objects, 'Deployment', 'mbx-mailbox-service-smtp').spec.template.spec;
      const c = pod.containers[0];
      expect(c.ports.map((p: any) => p.containerPort)).toEqual([8080, 2587, 2525]);
      expect(c.lifecycle.preStop.exec.command).toEqual(['sleep', '10']);
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(10 + 5);
      expect(c.env).toContainEqual({ name: 'SMTP_CLOSE_TIMEOUT', value: '25s' }); // smtp.closeTimeoutSeconds reaches the server
      for (const role of ['api', 'realtime']) {
        const http = named(objects, 'Deployment', `mbx-mailbox-service-${role}`).spec.template.spec;
        expect(http.containers[0].env).toContainEqual({ name: 'HTTP_DRAIN_TIMEOUT', value: '10s' });
        expect(http.terminationGracePeriodSeconds).toBeGreaterThan(5 + 10);
      }
      expect(
        ofKind(objects, 'Service')
          .filter((s) => s.spec.type === 'ClusterIP')
          .map((s) => s.metadata.name)
          .sort(),
      ).toEqual(['mbx-mailbox-service-api', 'mbx-mailbox-service-realtime']);
    });

    it('runs migrations as a pre-install/pre-upgrade hook Job', () => {
      const job = named(objects, 'Job', 'mbx-mailbox-service-migrate');
      expect(job.metadata.annotations['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      expect(job.spec.template.spec.containers[0].args).toEqual(['migrate']);
    });

    it('grants the operator only what it uses, cluster-wide by default, and the Lease by name', () => {
      const role = named(objects, 'ClusterRole', 'mbx-mailbox-service-operator');
      expect(role.rules.flatMap((r: any) => r.resources).sort()).toEqual([
        'domains',
        'domains/finalizers',
        'domains/status',
        'events',
        'mailboxes',
        'mailboxes/finalizers',
        'mailboxes/status',
        'secrets',
      ]);
      expect(JSON.stringify(role.rules)).not.toContain('"*"');
      const lease = named(objects, 'Role', 'mbx-mailbox-service-operator-lease');
      expect(lease.rules[1]).toEqual({
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['mbx-mailbox-service-operator'],
        verbs: ['get', 'update'],
      });
      expect(ofKind(objects, 'NetworkPolicy')).toHaveLength(5);
    });

    it('carries crds/ unchanged (helm template --include-crds)', async () => {
      const withCrds = await render([], ['--include-crds']);
      expect(ofKind(withCrds, 'CustomResourceDefinition')).toEqual(crdDocuments());
    });
  });

  it('with namespaced-operator: a Role in the watched namespace, SMTP TLS from a Secret, two Ingresses', async () => {
    const objects = await render(['namespaced-operator.yaml']);
    expect(ofKind(objects, 'ClusterRole')).toHaveLength(0);
    expect(named(objects, 'Role', 'mbx-mailbox-service-operator').metadata.namespace).toBe('mailboxes');
    const op = named(objects, 'Deployment', 'mbx-mailbox-service-operator').spec.template.spec.containers[0];
    expect(op.env).toEqual(
      expect.arrayContaining([
        { name: 'OPERATOR_WATCH_NAMESPACE', value: 'mailboxes' },
        { name: 'OPERATOR_LEASE_NAME', value: 'mail-operator' },
      ]),
    );
    const smtp = named(objects, 'Deployment', 'mbx-mailbox-service-smtp').spec.template.spec;
    expect(smtp.volumes).toContainEqual({ name: 'smtp-tls', secret: { secretName: 'smtp-tls' } });
    expect(smtp.containers[0].env).toEqual(
      expect.arrayContaining([
        { name: 'SMTP_TLS_CERT', value: '/etc/mailbox/smtp-tls/tls.crt' },
        { name: 'SMTP_HOSTNAME', value: 'mx.example.com' },
      ]),
    );
    const ingresses = ofKind(objects, 'Ingress');
    expect(ingresses.map((i) => i.spec.rules[0].http.paths[0].path).sort()).toEqual(['/', '/hubs/mailbox-events']);
    // TRUST_PROXY from config wins over the Ingress default, once.
    const api = named(objects, 'Deployment', 'mbx-mailbox-service-api').spec.template.spec.containers[0];
    expect(api.env.filter((e: { name: string }) => e.name === 'TRUST_PROXY')).toEqual([
      { name: 'TRUST_PROXY', value: '2' },
    ]);
    const realtime = ingresses.find((i) => i.spec.rules[0].http.paths[0].path === '/hubs/mailbox-events');
    expect(realtime.metadata.annotations['nginx.ingress.kubernetes.io/proxy-read-timeout']).toBe('3600');
  });

  // Offline, helm lists its own built-in API versions whatever --kube-version says; the chart also
  // compares the version, so 1.20 gets what 1.20 serves and 1.31 nothing removed since.
  it.each([
    { version: '1.20.2', hpa: 'autoscaling/v2beta2', pdb: 'policy/v1beta1' },
    { version: '1.31.0', hpa: 'autoscaling/v2', pdb: 'policy/v1' },
  ])('helm template --kube-version $version picks $hpa and $pdb, and only APIs that version serves', async (v) => {
    const served = new Set(['v1', 'apps/v1', 'batch/v1', 'networking.k8s.io/v1', 'rbac.authorization.k8s.io/v1']);
    for (const set of VALUE_SETS) {
      const objects = await render(set.files, ['--kube-version', v.version]);
      const kinds = (kind: string) => new Set(ofKind(objects, kind).map((o) => o.apiVersion));
      if (ofKind(objects, 'HorizontalPodAutoscaler').length)
        expect(kinds('HorizontalPodAutoscaler')).toEqual(new Set([v.hpa]));
      if (ofKind(objects, 'PodDisruptionBudget').length) expect(kinds('PodDisruptionBudget')).toEqual(new Set([v.pdb]));
      const unserved = objects.filter(
        (o) => !served.has(o.apiVersion) && o.apiVersion !== v.hpa && o.apiVersion !== v.pdb,
      );
      expect(unserved.map((o) => `${set.name}: ${o.kind} ${o.apiVersion}`)).toEqual([]);
    }
  });

  it('exposes api and realtime as NodePort Services when asked (reaching them without an Ingress)', async () => {
    const objects = await render(
      [],
      ['--set', 'api.service.type=NodePort', '--set', 'realtime.service.type=LoadBalancer'],
    );
    expect(named(objects, 'Service', 'mbx-mailbox-service-api').spec.type).toBe('NodePort');
    expect(named(objects, 'Service', 'mbx-mailbox-service-realtime').spec.type).toBe('LoadBalancer');
  });

  it('trusts one proxy hop (TRUST_PROXY=1) on every role while the Ingress is on, none without it', async () => {
    const env = (objects: any[], role: string) =>
      named(objects, 'Deployment', `mbx-mailbox-service-${role}`).spec.template.spec.containers[0].env.filter(
        (e: { name: string }) => e.name === 'TRUST_PROXY',
      );
    const withIngress = await render([], ['--set', 'ingress.enabled=true']);
    for (const role of ['api', 'realtime'])
      expect(env(withIngress, role)).toEqual([{ name: 'TRUST_PROXY', value: '1' }]);
    const cidrs = await render([], ['--set', 'ingress.enabled=true', '--set', 'ingress.trustProxy=10.0.0.0/8']);
    expect(env(cidrs, 'api')).toEqual([{ name: 'TRUST_PROXY', value: '10.0.0.0/8' }]);
    expect(env(await render([]), 'api')).toEqual([]);
  });

  it.skipIf(!onServer)('helm install --dry-run against the server renders NOTES.txt with the next steps', async () => {
    const res = await helm([
      'install',
      'mbx',
      CHART,
      '--dry-run',
      '--namespace',
      'default',
      '--kubeconfig',
      cluster.kubeconfigPath,
    ]);
    expect(res.ok, res.stderr).toBe(true);
    const notes = res.stdout.slice(res.stdout.indexOf('NOTES:'));
    expect(notes).toContain('kubectl get domains,mailboxes');
    expect(notes).toContain('get svc mbx-mailbox-service-smtp');
    expect(notes).toContain('STARTTLS uses a self-signed certificate');
  });

  it('documents every value in the chart README', () => {
    const values = parse(readFileSync(path.join(CHART, 'values.yaml'), 'utf8'));
    const readme = readFileSync(path.join(CHART, 'README.md'), 'utf8');
    const leaves: string[] = [];
    const walk = (v: unknown, prefix: string) => {
      if (
        v &&
        typeof v === 'object' &&
        !Array.isArray(v) &&
        Object.keys(v).length &&
        !prefix.endsWith('annotations') &&
        !prefix.endsWith('requests') &&
        !prefix.endsWith('limits')
      ) {
        for (const [k, child] of Object.entries(v)) walk(child, prefix ? `${prefix}.${k}` : k);
      } else leaves.push(prefix);
    };
    walk(values, '');
    expect(leaves.filter((key) => !readme.includes(`\`${key}\``))).toEqual([]);
  });

  it.skipIf(!onServer)(
    'the schema check itself catches a misplaced field, a wrong type and a missing field',
    async () => {
      const openapi = await fetchOpenApi(loadKubeConfig(cluster.kubeconfigPath));
      const broken = structuredClone(named(await render([]), 'Deployment', 'mbx-mailbox-service-api'));
      broken.spec.template.spec.containers[0].livenesProbe = {};
      broken.spec.template.spec.terminationGracePeriodSeconds = '30';
      delete broken.spec.selector;
      const errors = checkObject(openapi, broken);
      expect(errors).toHaveLength(3);
      expect(errors).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/spec\.selector: required$/),
          expect.stringMatching(/terminationGracePeriodSeconds: must be an integer/),
          expect.stringMatching(/containers\[0\]\.livenesProbe: unknown field$/),
        ]),
      );
    },
  );

  describe.each(VALUE_SETS)('Kubernetes schemas: $name', ({ files }) => {
    let openapi: OpenApi | null = null;
    beforeAll(async () => {
      if (onServer) openapi = await fetchOpenApi(loadKubeConfig(cluster.kubeconfigPath));
    });

    it.skipIf(!onServer)(
      "every object rendered for a current cluster matches the server's OpenAPI schema",
      async () => {
        const objects = await render(files);
        expect(objects.flatMap((o) => checkObject(openapi!, o))).toEqual([]);
      },
    );

    it.skipIf(!onServer)(
      "rendered with the server's capabilities, every object passes a server-side dry-run create",
      async () => {
        const kc = loadKubeConfig(cluster.kubeconfigPath);
        const namespace = `mbx-chart-${Math.random().toString(36).slice(2, 8)}`;
        await ensureNamespace(namespace);
        await ensureNamespace('mailboxes'); // operator.watchNamespace of one value set
        const res = await helm([
          'template',
          'mbx',
          CHART,
          '--namespace',
          namespace,
          '--validate',
          '--kubeconfig',
          cluster.kubeconfigPath,
          ...valuesArgs(files),
        ]);
        expect(res.ok, res.stderr).toBe(true);
        const objects = (await import('yaml'))
          .parseAllDocuments(res.stdout)
          .map((d) => d.toJSON())
          .filter(Boolean);
        if (cluster.mode === 'real') {
          // 1.20.2 serves neither autoscaling/v2 nor policy/v1: .Capabilities picked the older ones.
          expect(new Set(ofKind(objects, 'HorizontalPodAutoscaler').map((o) => o.apiVersion))).not.toContain(
            'autoscaling/v2',
          );
          expect(new Set(ofKind(objects, 'PodDisruptionBudget').map((o) => o.apiVersion))).not.toContain('policy/v1');
        }
        expect(objects.flatMap((o) => checkObject(openapi!, o))).toEqual([]);
        const refused: string[] = [];
        for (const obj of objects) {
          const answer = await createObject(kc, obj, obj.metadata.namespace ?? namespace, { dryRun: true });
          if (answer.status !== 201)
            refused.push(`${obj.kind}/${obj.metadata.name}: ${answer.status} ${answer.body?.message}`);
        }
        expect(refused).toEqual([]);
      },
    );
  });
});
