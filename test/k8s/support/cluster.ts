import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { realApiServerAvailable, startRealApiServer } from './apiserver.js';
import { StandInApiServer } from './stand-in-apiserver.js';

export type ClusterMode = 'real' | 'kubeconfig' | 'stand-in';

export interface ClusterInfo {
  mode: ClusterMode;
  kubeconfigPath: string;
  /** One line for the test output: which API server these tests talk to. */
  description: string;
}

export interface TestCluster extends ClusterInfo {
  /** Breaks every connection (watches) and brings the server back; not for a given cluster. */
  restart?(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Which Kubernetes API the k8s tests use, in this order:
 * 1. MBX_TEST_KUBECONFIG=<file>: that cluster (a kind/minikube/real cluster). Deliberately not
 *    plain KUBECONFIG, so `make test` never touches whatever cluster a shell points at.
 * 2. the real kube-apiserver v1.20.2 built by scripts/build-kube-apiserver.sh, with etcd;
 * 3. otherwise the in-process stand-in, and the output says so.
 */
export async function startCluster(): Promise<TestCluster> {
  const given = process.env.MBX_TEST_KUBECONFIG;
  if (given)
    return {
      mode: 'kubeconfig',
      kubeconfigPath: given,
      description: `the cluster of MBX_TEST_KUBECONFIG=${given}`,
      stop: async () => undefined,
    };
  const available = realApiServerAvailable();
  if (available.ok) {
    const server = await startRealApiServer();
    return {
      mode: 'real',
      kubeconfigPath: server.kubeconfigPath,
      description: `a real kube-apiserver v1.20.2 (with etcd) at ${server.url}`,
      restart: () => server.restart(),
      stop: () => server.stop(),
    };
  }
  const standIn = new StandInApiServer();
  const url = await standIn.start();
  const dir = mkdtempSync(path.join(tmpdir(), 'mbx-standin-'));
  const kubeconfigPath = path.join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfigPath,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: stand-in',
      'clusters:',
      '- name: stand-in',
      `  cluster: { server: "${url}", insecure-skip-tls-verify: true }`,
      'users:',
      '- name: stand-in',
      '  user: { token: stand-in }',
      'contexts:',
      '- name: stand-in',
      '  context: { cluster: stand-in, user: stand-in }',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return {
    mode: 'stand-in',
    kubeconfigPath,
    description: `the IN-PROCESS STAND-IN for the Kubernetes API at ${url}, NOT a real API server (${available.why})`,
    restart: () => standIn.restart(),
    stop: async () => {
      await standIn.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
