import {
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import type { Logger } from '../../src/core/base/logger.js';
import { operatorMetrics } from './operator-metrics.js';

const FIRST_RESTART_MS = 1_000;
const MAX_RESTART_MS = 30_000;

export type ChangeVerb = 'add' | 'update' | 'delete';

/**
 * One list + watch over a collection, kept alive for the life of the process.
 *
 * client-node's ListWatch relists by itself after 410 Gone (an ERROR event or an HTTP 410: the
 * resourceVersion it watched from was compacted away) and reconnects after a clean end of the
 * stream, but on any other error (API server down, connection reset, 5xx) it reports the error
 * and stops. Here every such stop is followed by a restart from the last resourceVersion, with
 * backoff from 1 s doubling to 30 s; a watch error never ends the process.
 */
export class WatchedCollection<T extends KubernetesObject> {
  private readonly informer: Informer<T> & ObjectCache<T>;
  private stopped = true;
  private synced = false;
  private readonly syncWaiters: Array<() => void> = [];
  private failures = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  /** Counters for tests and /healthz (the Prometheus counters are process-wide). */
  readonly stats = { relists: 0, restarts: 0, lastError: null as string | null };

  constructor(
    kc: KubeConfig,
    readonly path: string,
    list: () => Promise<KubernetesListObject<T>>,
    private readonly resource: string,
    private readonly log: Logger,
  ) {
    this.informer = makeInformer(kc, path, async () => {
      const result = await list();
      this.stats.relists++;
      operatorMetrics.relists.inc({ resource });
      this.failures = 0;
      this.markSynced();
      return result;
    });
    this.informer.on('error', (err) => this.onError(err));
  }

  on(verb: ChangeVerb, callback: (obj: T) => void): void {
    this.informer.on(verb, (obj) => {
      this.failures = 0;
      callback(obj);
    });
  }

  get(name: string, namespace: string): T | undefined {
    return this.informer.get(name, namespace);
  }

  list(): readonly T[] {
    return this.informer.list();
  }

  get isSynced(): boolean {
    return this.synced;
  }

  /** Starts listing and watching; resolves once the first list arrived or after `timeoutMs`. */
  async start(timeoutMs: number): Promise<boolean> {
    this.stopped = false;
    const synced = new Promise<void>((resolve) => (this.synced ? resolve() : this.syncWaiters.push(resolve)));
    void this.informer.start().catch((err: unknown) => this.onError(err));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    await Promise.race([synced, timeout]);
    clearTimeout(timer);
    return this.synced;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    await this.informer.stop();
  }

  /**
   * Drops the watch and resumes it from `resourceVersion`, as after a lost connection. Tests use
   * it with an old resourceVersion to make the real API server answer 410 Gone.
   */
  async reconnectFrom(resourceVersion: string, whileDisconnected?: () => Promise<void>): Promise<void> {
    await this.informer.stop();
    await whileDisconnected?.();
    // Let the aborted request report its end before the new one exists (it would abort that one).
    await new Promise((resolve) => setTimeout(resolve, 100));
    (this.informer as unknown as { resourceVersion: string }).resourceVersion = resourceVersion;
    await this.informer.start();
  }

  private onError(err: unknown): void {
    // Our own stop() aborts the request; that is not a failure.
    if (this.stopped || (err as { name?: string } | null)?.name === 'AbortError') return;
    this.failures++;
    this.stats.restarts++;
    this.stats.lastError = err instanceof Error ? err.message : String(err);
    operatorMetrics.watchRestarts.inc({ resource: this.resource });
    const delay = Math.min(FIRST_RESTART_MS * 2 ** (this.failures - 1), MAX_RESTART_MS);
    this.log.warn('operator.watch_restart', {
      resource: this.resource,
      path: this.path,
      delayMs: delay,
      message: this.stats.lastError,
    });
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (!this.stopped) void this.informer.start().catch((e: unknown) => this.onError(e));
    }, delay);
    this.restartTimer.unref();
  }

  private markSynced(): void {
    this.synced = true;
    this.syncWaiters.splice(0).forEach((resolve) => resolve());
  }
}
