import type { E2eEnv } from '../support/environment.js';
import { figure } from '../support/figures.js';
import { helm, kubectl, kubectlJson, waitFor } from '../support/kubectl.js';

const WORKLOAD_KINDS = 'deployments,replicasets,pods,jobs,services,horizontalpodautoscalers,poddisruptionbudgets';
const OTHER_KINDS = 'serviceaccounts,roles,rolebindings,networkpolicies,configmaps';

/**
 * What a user does to remove it: delete the Domain/Mailbox resources (the operator finalizes them
 * and their Secrets go with their owner), then `helm uninstall`. Nothing of the release may be left
 * running; what stays is what the chart README says stays.
 */
export async function uninstall(env: E2eEnv): Promise<void> {
  const ns = ['-n', env.namespace];
  const removed = await kubectl([...ns, 'delete', 'mailboxes,domains', '--all', '--timeout=90s'], {
    allowFail: true,
    timeoutMs: 100_000,
  });
  figure({
    suite: 'uninstall',
    name: 'Mailboxes and Domain deleted while the operator runs (finalizers released)',
    value: removed.ok ? 'yes' : removed.stderr.trim().slice(0, 120),
    target: 'yes',
    pass: removed.ok,
  });
  const res = await helm(['uninstall', env.release, '-n', env.namespace, '--wait', '--timeout', '3m']);
  const label = `app.kubernetes.io/instance=${env.release}`;
  const leftovers = async () => {
    const list = await kubectlJson([...ns, 'get', `${WORKLOAD_KINDS},${OTHER_KINDS}`, '-l', label]);
    return list.items.map((o: any) => `${o.kind}/${o.metadata.name}`) as string[];
  };
  const left = await waitFor(
    'nothing of the release left',
    async () => ((await leftovers()).length === 0 ? [] : undefined),
    90_000,
    1000,
  ).catch(() => leftovers());
  figure({
    suite: 'uninstall',
    name: 'objects of the release left after helm uninstall (workloads, Services, HPA, PDB, RBAC, policies)',
    value: res.ok ? (left.length ? left.join(' ') : 0) : `helm: ${res.stderr.trim().slice(0, 120)}`,
    target: '= 0',
    pass: res.ok && left.length === 0,
  });
  const secrets = (await kubectlJson([...ns, 'get', 'secrets'])).items
    .filter((s: any) => s.type !== 'kubernetes.io/service-account-token')
    .map((s: any) => s.metadata.name);
  const crds = (
    await kubectl(['get', 'crd', 'domains.mailbox-service.dev', 'mailboxes.mailbox-service.dev', '-o', 'name'], {
      allowFail: true,
    })
  ).stdout
    .trim()
    .split('\n')
    .filter(Boolean);
  const leases = (await kubectl([...ns, 'get', 'lease', '-o', 'name'], { allowFail: true })).stdout
    .trim()
    .split('\n')
    .filter(Boolean);
  const expectedSecrets = ['mailbox-database', 'mailbox-redis', 'mailbox-server-key', 'smtp-tls'];
  const unexpected = secrets.filter((s: string) => !expectedSecrets.includes(s));
  figure({
    suite: 'uninstall',
    name: 'kept as the chart README says: CRDs, the operator Lease, the Secrets the user created',
    value: `${crds.length} CRDs, ${leases.length} Lease, Secrets: ${secrets.join(' ')}`,
    target: 'only those (no operator-written Secret)',
    pass: unexpected.length === 0,
  });
}
