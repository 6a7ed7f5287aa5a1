import type { Logger } from '../../base/logger.js';
import { refId, type ResourceRef } from './manifest.schema.js';
import type { ReconcileResult, ResourceSource, SourceItem } from './ports.js';
import type { ResourceReconciler } from './reconciler.js';

export interface ControllerOptions {
  /** Full relist and reconcile of everything: the safety net for missed notices and token renewal. */
  resyncMs: number;
  /** First retry delay of a resource that is not Ready; doubles per failure up to `maxBackoffMs`. */
  baseBackoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_CONTROLLER_OPTIONS: ControllerOptions = {
  resyncMs: 60_000,
  baseBackoffMs: 1_000,
  maxBackoffMs: 60_000,
};

/**
 * The work loop shared by every source: a deduplicating per-resource queue, one reconcile at a
 * time, Domains before Mailboxes, per-resource exponential backoff while not Ready, and a
 * periodic resync. Mailboxes waiting for their Domain are retried as soon as a Domain is Ready.
 * Nothing here throws out of a timer or a watch callback: errors are logged and retried.
 */
export class ResourceController {
  private readonly pending = new Map<string, ResourceRef>();
  private readonly failures = new Map<string, number>();
  private readonly retryTimers = new Map<string, NodeJS.Timeout>();
  private readonly waitingForDomain = new Map<string, ResourceRef>();
  private loop: Promise<void> | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;
  private watch: { close(): Promise<void> } | null = null;
  private stopped = false;
  private listing: Promise<void> | null = null;

  constructor(
    private readonly source: ResourceSource,
    private readonly reconciler: ResourceReconciler,
    private readonly log: Logger,
    private readonly options: ControllerOptions = DEFAULT_CONTROLLER_OPTIONS,
  ) {}

  /** Lists and reconciles everything once (resolves when that pass is done), then keeps watching. */
  async start(): Promise<void> {
    this.watch = await this.source
      .watch((changed) => {
        if (changed === 'all') void this.relist();
        else changed.forEach((ref) => this.enqueue(ref));
      })
      .catch((err: unknown) => {
        this.log.warn('resources.watch_failed', { err });
        return null;
      });
    await this.relist();
    await this.idle();
    this.resyncTimer = setInterval(() => void this.relist(), this.options.resyncMs);
    this.resyncTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const timer of this.retryTimers.values()) clearTimeout(timer);
    this.retryTimers.clear();
    this.pending.clear();
    await this.watch?.close().catch(() => undefined);
    await this.listing?.catch(() => undefined);
    await this.loop;
  }

  /** Asks for one resource to be reconciled now (deduplicated while queued). */
  enqueue(ref: ResourceRef): void {
    if (this.stopped) return;
    this.pending.set(refId(ref), ref);
    this.loop ??= this.drain().finally(() => {
      this.loop = null;
    });
  }

  /** Resolves when the queue is empty (retries scheduled for later do not count). */
  async idle(): Promise<void> {
    while (this.loop || this.listing) await (this.listing ?? this.loop);
  }

  /** Concurrent relists collapse into the one running: it reads the latest state anyway. */
  private relist(): Promise<void> {
    this.listing ??= this.source
      .list()
      .then((items) => items.forEach((item) => this.enqueue(item.ref)))
      .catch((err: unknown) => this.log.warn('resources.list_failed', { err }))
      .finally(() => {
        this.listing = null;
      });
    return this.listing;
  }

  private async drain(): Promise<void> {
    for (let ref = this.next(); ref && !this.stopped; ref = this.next()) {
      const id = refId(ref);
      this.pending.delete(id);
      const result = await this.process(ref).catch((err: unknown): ReconcileResult => ({
        ref: ref!,
        outcome: 'failed',
        ready: false,
        reason: 'ReconcileError',
        message: String(err),
      }));
      this.afterResult(id, ref, result);
    }
  }

  /** Domains first, so a Mailbox declared next to its Domain converges in the same pass. */
  private next(): ResourceRef | undefined {
    let first: ResourceRef | undefined;
    for (const ref of this.pending.values()) {
      if (ref.kind === 'Domain') return ref;
      first ??= ref;
    }
    return first;
  }

  private async process(ref: ResourceRef): Promise<ReconcileResult | null> {
    const item: SourceItem | null = await this.source.get(ref);
    if (!item) return null;
    if (item.deleting) {
      const opts = { tokenSecretName: item.deleting.tokenSecretName };
      const result =
        ref.kind === 'Domain'
          ? await this.reconciler.deleteDomain(ref, opts)
          : await this.reconciler.deleteMailbox(ref, opts);
      if (result.outcome !== 'failed') await this.source.finalize(ref);
      return result;
    }
    return item.resource.kind === 'Domain'
      ? this.reconciler.reconcileDomain(item.resource)
      : this.reconciler.reconcileMailbox(item.resource);
  }

  private afterResult(id: string, ref: ResourceRef, result: ReconcileResult | null): void {
    const timer = this.retryTimers.get(id);
    if (timer) clearTimeout(timer);
    this.retryTimers.delete(id);
    this.waitingForDomain.delete(id);
    if (!result || result.ready || result.reason === 'Deleted') {
      this.failures.delete(id);
      if (result?.ready && ref.kind === 'Domain')
        for (const waiting of this.waitingForDomain.values()) this.enqueue(waiting);
      return;
    }
    if (result.reason === 'DomainNotFound') this.waitingForDomain.set(id, ref);
    const failures = (this.failures.get(id) ?? 0) + 1;
    this.failures.set(id, failures);
    const delay = Math.min(this.options.baseBackoffMs * 2 ** (failures - 1), this.options.maxBackoffMs);
    const retry = setTimeout(() => {
      this.retryTimers.delete(id);
      this.enqueue(ref);
    }, delay);
    retry.unref();
    this.retryTimers.set(id, retry);
  }
}
