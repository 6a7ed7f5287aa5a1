import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../../src/config/config.js';
import type { Logger } from '../../src/core/base/logger.js';
import { createPinoLogger } from '../../src/logging/pino-logger.js';
import {
  DEFAULT_CONTROLLER_OPTIONS,
  ResourceController,
  type ControllerOptions,
} from '../../src/core/flows/resources/controller.js';
import type { ReconcileResult } from '../../src/core/flows/resources/ports.js';
import type { ResourceReconciler } from '../../src/core/flows/resources/reconciler.js';
import { createReconciler } from '../../src/core/flows/resources/resource-runtime.js';
import { startRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { currentTraceId } from '../../src/telemetry/tracing.js';
import { DkimSecrets } from './dkim-secret.js';
import { EventRecorder } from './events.js';
import { kubeClients, loadKubeConfig, type KubeClients } from './kube.js';
import { KubernetesResourceSource } from './kubernetes-source.js';
import { KubernetesSecretStore } from './kubernetes-secret-store.js';
import { KubernetesStatusSink } from './kubernetes-status-sink.js';
import { DEFAULT_LEASE_TIMINGS, LeaderElector, type LeaseTimings } from './leader-election.js';
import { operatorMetrics } from './operator-metrics.js';
import { startOperatorServer } from './operator-server.js';

export interface OperatorOptions {
  log?: Logger;
  /** Default: KUBECONFIG from config, else in-cluster, else ~/.kube/config. */
  kubeConfig?: KubeConfig;
  /** Ready-made API clients (tests wrap them to inject conflicts); default: made from kubeConfig. */
  clients?: KubeClients;
  /** Default: hostname (the pod name) plus a random suffix, unique per process. */
  identity?: string;
  timings?: LeaseTimings;
  controller?: Partial<ControllerOptions>;
  /** Port of /healthz and /metrics (default OPERATOR_PORT); null starts no server. */
  port?: number | null;
  syncTimeoutMs?: number;
}

export interface OperatorHandle {
  readonly identity: string;
  readonly isLeader: boolean;
  readonly port: number | null;
  readonly runtime: Runtime;
  /** The informers of the current leadership term; null while standing by. */
  readonly source: KubernetesResourceSource | null;
  /** Per instance (Prometheus counters are per process): reconciles run and terms led. */
  readonly stats: { reconciles: number; terms: number };
  /** `release: false` leaves the Lease held, as a crash would. */
  close(options?: { release?: boolean }): Promise<void>;
}

interface Term {
  source: KubernetesResourceSource;
  stop(): Promise<void>;
}

/**
 * `mailbox operator`: the core services on the configured database, a leader elector on a Lease,
 * and while leading one "term": informers, the Kubernetes stores and the core's
 * ResourceController, all reused unchanged from src/core/flows/resources. Terms start and stop in
 * order (a chain), so a new term never overlaps the one before.
 */
export async function startOperator(config: Readonly<Config>, options: OperatorOptions = {}): Promise<OperatorHandle> {
  const log =
    options.log ??
    createPinoLogger(config.LOG_LEVEL, {
      context: () => {
        const tid = currentTraceId();
        return tid ? { tid } : {};
      },
    });
  // The operator is the only source in its process: never also apply a manifest directory.
  const runtime = await startRuntime({ ...config, MAILBOX_RESOURCES_DIR: undefined }, { roles: [], log });
  const clients = options.clients ?? kubeClients(options.kubeConfig ?? loadKubeConfig(config.KUBECONFIG));
  const identity = options.identity ?? `${hostname()}-${randomBytes(3).toString('hex')}`;
  const stats = { reconciles: 0, terms: 0 };
  const controllerOptions: ControllerOptions = {
    ...DEFAULT_CONTROLLER_OPTIONS,
    resyncMs: config.OPERATOR_RESYNC,
    ...options.controller,
  };
  let term: Term | null = null;
  let closing = false;
  let chain: Promise<void> = Promise.resolve();
  const enqueue = (step: () => Promise<void>) => {
    chain = chain.then(step).catch((err: unknown) => log.error('operator.term_failed', { err }));
  };

  const elector = new LeaderElector(clients.coordination, {
    namespace: config.OPERATOR_LEASE_NAMESPACE,
    name: config.OPERATOR_LEASE_NAME,
    identity,
    timings: options.timings ?? DEFAULT_LEASE_TIMINGS,
    log,
    onStartedLeading: () =>
      enqueue(async () => {
        if (closing || !elector.isLeader || term) return;
        stats.terms++;
        term = startTerm(
          clients,
          runtime,
          log,
          identity,
          controllerOptions,
          config.OPERATOR_WATCH_NAMESPACE,
          options.syncTimeoutMs,
          (result) => {
            stats.reconciles++;
            operatorMetrics.reconciles.inc({ kind: result.ref.kind, outcome: result.outcome });
          },
        );
      }),
    onStoppedLeading: () =>
      enqueue(async () => {
        const ending = term;
        term = null;
        await ending?.stop();
      }),
  });

  const server =
    options.port === null
      ? null
      : await startOperatorServer(options.port ?? config.OPERATOR_PORT, config.HOST, () => ({
          identity,
          leader: elector.isLeader,
          informers: term
            ? Object.fromEntries(
                [term.source.domains, term.source.mailboxes, term.source.secrets].map((c) => [
                  c.path,
                  { synced: c.isSynced, ...c.stats },
                ]),
              )
            : {},
        }));
  elector.start();
  log.info('operator.started', {
    identity,
    lease: `${config.OPERATOR_LEASE_NAMESPACE}/${config.OPERATOR_LEASE_NAME}`,
    namespace: config.OPERATOR_WATCH_NAMESPACE ?? '(all)',
    port: server?.port ?? null,
  });

  return {
    identity,
    get isLeader() {
      return elector.isLeader;
    },
    port: server?.port ?? null,
    runtime,
    get source() {
      return term?.source ?? null;
    },
    stats,
    async close(closeOptions = {}) {
      // Stop reconciling first, then give the Lease up, so a standby starts only after we stopped.
      closing = true;
      enqueue(async () => {
        const ending = term;
        term = null;
        await ending?.stop();
      });
      await chain;
      // A Lease release the API server does not answer must not hold the shutdown past the grace period.
      await Promise.race([elector.stop(closeOptions), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
      await chain;
      await server?.close();
      await runtime.close();
    },
  };
}

function startTerm(
  clients: KubeClients,
  runtime: Runtime,
  log: Logger,
  identity: string,
  controllerOptions: ControllerOptions,
  namespace: string | undefined,
  syncTimeoutMs: number | undefined,
  onResult: (result: ReconcileResult) => void,
): Term {
  const events = new EventRecorder(clients.core, identity, log);
  const sourceRef: { current?: KubernetesResourceSource } = {};
  const status = new KubernetesStatusSink(clients.custom, events, (ref) => sourceRef.current?.cached(ref));
  const source = new KubernetesResourceSource(clients, status, events, log, {
    namespace,
    ...(syncTimeoutMs ? { syncTimeoutMs } : {}),
  });
  sourceRef.current = source;
  const secrets = new KubernetesSecretStore(clients.core, events);
  const reconciler = createReconciler(runtime.services, secrets, status);
  const dkim = new DkimSecrets(runtime.services.transport.dkim, secrets, clients.custom, events, log);
  observeResults(reconciler, async (result) => {
    onResult(result);
    if (result.ref.kind === 'Domain' && result.outcome !== 'failed') await dkim.afterDomain(result);
  });
  const controller = new ResourceController(source, reconciler, log, controllerOptions);
  const started = controller.start().catch((err: unknown) => log.error('operator.controller_failed', { err }));
  return {
    source,
    async stop() {
      // stop() halts the queue after the reconcile in flight; the second call also clears what a
      // start() still running at the first call set up afterwards (its watch and resync timer).
      await controller.stop();
      await started;
      await controller.stop();
      await source.close();
    },
  };
}

/**
 * Sees every result without changing the core: wraps the reconciler's four entry points, so the
 * DKIM Secret is written in the same queue turn as its Domain (and removed before the finalizer).
 */
function observeResults(reconciler: ResourceReconciler, onResult: (result: ReconcileResult) => Promise<void>): void {
  for (const method of ['reconcileDomain', 'reconcileMailbox', 'deleteDomain', 'deleteMailbox'] as const) {
    const original = reconciler[method].bind(reconciler) as (...args: unknown[]) => Promise<ReconcileResult>;
    (reconciler as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
      const result = await original(...args);
      await onResult(result);
      return result;
    };
  }
}
