import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CoreV1Event } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../../src/config/config.js';
import { silentLogger, type Logger } from '../../../src/core/base/logger.js';
import { createPinoLogger } from '../../../src/logging/pino-logger.js';
import { createScratchDatabase } from '../../support/harness.js';
import {
  kubeClients,
  loadKubeConfig,
  MERGE_PATCH,
  type CustomObject,
  type KubeClients,
} from '../../../operator/src/kube.js';
import { GROUP, PLURAL, VERSION, type DeclaredKind } from '../../../operator/src/names.js';
import { startOperator, type OperatorHandle, type OperatorOptions } from '../../../operator/src/operator.js';
import type { ClusterInfo } from './cluster.js';

/** Short leases so failover tests take seconds, not the 15 s production default (other files keep that). */
export const FAST_LEASE = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 250 };

export interface OperatorEnv {
  cluster: ClusterInfo;
  clients: KubeClients;
  namespace: string;
  config: Readonly<Config>;
  operators: OperatorHandle[];
  /** Starts one more operator replica (same database, same Lease). */
  startReplica(options?: OperatorOptions): Promise<OperatorHandle>;
  create(kind: DeclaredKind, name: string, spec: Record<string, unknown>): Promise<CustomObject>;
  patchSpec(kind: DeclaredKind, name: string, spec: Record<string, unknown>): Promise<CustomObject>;
  remove(kind: DeclaredKind, name: string): Promise<void>;
  get(kind: DeclaredKind, name: string): Promise<CustomObject | null>;
  secret(
    name: string,
  ): Promise<{ data: Record<string, string>; ownerReferences: any[]; labels: Record<string, string> } | null>;
  putSecret(name: string, data: Record<string, string>): Promise<void>;
  events(name: string): Promise<CoreV1Event[]>;
  /** Ready True for the object's current generation; returns the object. */
  ready(kind: DeclaredKind, name: string, timeoutMs?: number): Promise<CustomObject>;
  close(): Promise<void>;
}

/** Polls `probe` until it returns something truthy; the error names what was awaited. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const readyCondition = (obj: CustomObject | null | undefined): any =>
  ((obj?.status?.conditions as any[] | undefined) ?? []).find((c) => c.type === 'Ready');

/**
 * One operator environment per test file: its own namespace on the shared API server, its own
 * scratch PostgreSQL database, and operator replicas in this process watching only that
 * namespace (with their Lease in it), so files running in parallel never see each other.
 */
export async function operatorEnv(
  options: { cluster?: ClusterInfo; replicas?: number; operator?: OperatorOptions; log?: Logger } = {},
): Promise<OperatorEnv> {
  const cluster = options.cluster ?? inject('k8sCluster');
  // MBX_TEST_OPERATOR_LOG=debug shows the operators' log lines on stderr while debugging a test.
  const level = process.env.MBX_TEST_OPERATOR_LOG as 'debug' | 'info' | undefined;
  const log = options.log ?? (level ? createPinoLogger(level, { fd: 2 }) : silentLogger);
  const kc = loadKubeConfig(cluster.kubeconfigPath);
  const clients = kubeClients(kc);
  const namespace = `mbx-test-${randomBytes(4).toString('hex')}`;
  await clients.core.createNamespace({ body: { metadata: { name: namespace } } });
  const scratch = await createScratchDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-op-'));
  const config = loadConfig({
    HOST: '127.0.0.1',
    OPERATOR_PORT: '0',
    MAILBOX_DATA_DIR: dataDir,
    DATABASE_URL: scratch.url,
    DATABASE_POOL_MAX: '4',
    MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
    OPERATOR_WATCH_NAMESPACE: namespace,
    OPERATOR_LEASE_NAMESPACE: namespace,
    KUBECONFIG: cluster.kubeconfigPath,
  });
  const operators: OperatorHandle[] = [];
  const crd = (kind: DeclaredKind) => ({ group: GROUP, version: VERSION, namespace, plural: PLURAL[kind] });
  const startReplica = async (extra: OperatorOptions = {}) => {
    const op = await startOperator(config, {
      log,
      controller: { baseBackoffMs: 200, maxBackoffMs: 2_000 },
      ...options.operator,
      ...extra,
    });
    operators.push(op);
    return op;
  };
  const get = async (kind: DeclaredKind, name: string) => {
    try {
      return (await clients.custom.getNamespacedCustomObject({ ...crd(kind), name })) as CustomObject;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return null;
      throw err;
    }
  };

  const env: OperatorEnv = {
    cluster,
    clients,
    namespace,
    config,
    operators,
    startReplica,
    create: async (kind, name, spec) =>
      (await clients.custom.createNamespacedCustomObject({
        ...crd(kind),
        body: { apiVersion: `${GROUP}/${VERSION}`, kind, metadata: { name }, spec },
      })) as CustomObject,
    patchSpec: async (kind, name, spec) =>
      (await clients.custom.patchNamespacedCustomObject(
        { ...crd(kind), name, body: { spec } },
        MERGE_PATCH,
      )) as CustomObject,
    remove: async (kind, name) => {
      await clients.custom.deleteNamespacedCustomObject({ ...crd(kind), name });
    },
    get,
    async secret(name) {
      try {
        const s = await clients.core.readNamespacedSecret({ namespace, name });
        const data = Object.fromEntries(
          Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
        );
        return { data, ownerReferences: s.metadata?.ownerReferences ?? [], labels: s.metadata?.labels ?? {} };
      } catch (err) {
        if ((err as { code?: number }).code === 404) return null;
        throw err;
      }
    },
    async putSecret(name, data) {
      const body = { metadata: { name, namespace }, type: 'Opaque', stringData: data };
      try {
        const current = await clients.core.readNamespacedSecret({ namespace, name });
        await clients.core.replaceNamespacedSecret({
          namespace,
          name,
          body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion } },
        });
      } catch (err) {
        if ((err as { code?: number }).code !== 404) throw err;
        await clients.core.createNamespacedSecret({ namespace, body });
      }
    },
    async events(name) {
      const list = await clients.core.listNamespacedEvent({ namespace });
      return list.items.filter((e) => e.involvedObject.name === name);
    },
    ready: (kind, name, timeoutMs = 30_000) =>
      waitFor(
        `${kind} ${name} Ready=True`,
        async () => {
          const obj = await get(kind, name);
          const ready = readyCondition(obj);
          return ready?.status === 'True' && obj!.status!.observedGeneration === obj!.metadata.generation ? obj : null;
        },
        timeoutMs,
      ),
    async close() {
      // Let a running operator release its own finalizers first (a real cluster could not delete
      // the namespace otherwise), then stop every replica and drop what this file created.
      if (operators.some((op) => op.isLeader)) {
        for (const kind of ['Mailbox', 'Domain'] as const) {
          const list = (await clients.custom.listNamespacedCustomObject(crd(kind)).catch(() => ({ items: [] }))) as {
            items: CustomObject[];
          };
          for (const obj of list.items) await env.remove(kind, obj.metadata.name).catch(() => undefined);
          await waitFor(
            `every ${kind} finalized`,
            async () =>
              ((await clients.custom.listNamespacedCustomObject(crd(kind))) as { items: unknown[] }).items.length === 0,
            20_000,
          ).catch(() => undefined);
        }
      }
      for (const op of operators.splice(0)) await op.close().catch(() => undefined);
      await clients.core.deleteNamespace({ name: namespace }).catch(() => undefined);
      await scratch.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  for (let i = 0; i < (options.replicas ?? 1); i++) await startReplica();
  return env;
}
