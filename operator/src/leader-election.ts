import { V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../../src/core/base/logger.js';
import { apiMessage, isConflict, isNotFound } from './kube.js';
import { operatorMetrics } from './operator-metrics.js';

export interface LeaseTimings {
  /** How long a Lease is honoured after its holder's last renewal. */
  leaseDurationMs: number;
  /** A leader that could not renew for this long stops leading (less than the duration, so it stops first). */
  renewDeadlineMs: number;
  /** Pause between attempts to acquire or renew. */
  retryPeriodMs: number;
}

/** client-go's defaults (15 s / 10 s / 2 s). */
export const DEFAULT_LEASE_TIMINGS: LeaseTimings = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

export interface LeaderElectorOptions {
  namespace: string;
  name: string;
  identity: string;
  timings: LeaseTimings;
  log: Logger;
  /** Called (not awaited by the renew loop) when this replica becomes leader. */
  onStartedLeading(): void;
  /** Called when leadership is lost or given up; the caller must stop reconciling. */
  onStoppedLeading(): void;
}

type Attempt = 'held' | 'other';

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it, so two operator
 * replicas never reconcile at the same time. A candidate takes the Lease when it is free or when
 * its record has not changed for leaseDuration by the candidate's own clock (no clock-skew
 * trust); every write is a replace conditional on the resourceVersion read, so of two racing
 * candidates one gets 409 and stays a candidate. Lease times are MicroTime: the API server
 * parses exactly six fractional digits (`V1MicroTime`; a plain Date is refused with 400).
 */
export class LeaderElector {
  private leading = false;
  private stopped = false;
  private loop: Promise<void> | null = null;
  private lastRenewAt = 0;
  private observed: { record: string; at: number } | null = null;
  private wake: (() => void) | null = null;

  constructor(
    private readonly api: CoordinationV1Api,
    private readonly opts: LeaderElectorOptions,
  ) {}

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops campaigning; a leader gives the Lease up so a standby takes over at once. */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    const wasLeading = this.leading;
    this.setLeading(false);
    if (wasLeading && options.release !== false)
      await this.release().catch((err: unknown) =>
        this.opts.log.warn('operator.lease_release_failed', { message: apiMessage(err) }),
      );
  }

  private async run(): Promise<void> {
    const { timings, log } = this.opts;
    while (!this.stopped) {
      let attempt: Attempt | 'error';
      try {
        attempt = await withTimeout(this.tryAcquireOrRenew(), Math.max(1_000, Math.floor(timings.renewDeadlineMs / 2)));
      } catch (err) {
        attempt = 'error';
        log.warn('operator.lease_error', { lease: this.opts.name, message: apiMessage(err) });
      }
      if (this.stopped) break;
      if (attempt === 'held') {
        this.lastRenewAt = Date.now();
        if (!this.leading) this.setLeading(true);
      } else if (this.leading && (attempt === 'other' || Date.now() - this.lastRenewAt >= timings.renewDeadlineMs)) {
        this.setLeading(false);
      }
      await this.sleep(timings.retryPeriodMs);
    }
  }

  private setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    operatorMetrics.leader.set(leading ? 1 : 0);
    this.opts.log.info(leading ? 'operator.leading' : 'operator.stopped_leading', {
      lease: `${this.opts.namespace}/${this.opts.name}`,
      identity: this.opts.identity,
    });
    if (leading) this.opts.onStartedLeading();
    else this.opts.onStoppedLeading();
  }

  private async tryAcquireOrRenew(): Promise<Attempt> {
    const { namespace, name, identity, timings } = this.opts;
    const now = new V1MicroTime(Date.now());
    const seconds = Math.max(1, Math.ceil(timings.leaseDurationMs / 1000));
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ namespace, name });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await this.api.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds: seconds,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: 0,
            },
          },
        });
        return 'held';
      } catch (createErr) {
        if (isConflict(createErr)) return 'other';
        throw createErr;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    // Read back, MicroTimes are strings; they are only compared, never parsed.
    const record = `${holder}|${String(spec.renewTime)}|${spec.leaseDurationSeconds}`;
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    const durationMs = (spec.leaseDurationSeconds ?? seconds) * 1000;
    if (holder && holder !== identity && this.observed.at + durationMs > Date.now()) return 'other';
    const renewing = holder === identity;
    lease.spec = {
      holderIdentity: identity,
      leaseDurationSeconds: seconds,
      acquireTime: renewing && spec.acquireTime ? spec.acquireTime : now,
      renewTime: now,
      leaseTransitions: (spec.leaseTransitions ?? 0) + (renewing ? 0 : 1),
    };
    try {
      await this.api.replaceNamespacedLease({ namespace, name, body: lease });
      return 'held';
    } catch (err) {
      if (isConflict(err)) return 'other';
      throw err;
    }
  }

  private async release(): Promise<void> {
    const { namespace, name, identity } = this.opts;
    const lease = await this.api.readNamespacedLease({ namespace, name });
    if (lease.spec?.holderIdentity !== identity) return;
    const now = new V1MicroTime(Date.now());
    lease.spec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now };
    await this.api.replaceNamespacedLease({ namespace, name, body: lease });
    this.opts.log.info('operator.lease_released', { lease: `${namespace}/${name}`, identity });
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        this.wake = null;
        done();
      };
    });
  }
}

/**
 * A hung request (a network partition without a reset) must not keep a leader believing it
 * leads past its renew deadline: an attempt that takes too long counts as failed. Should it
 * still succeed later, this replica only holds the Lease longer than it acts on it (safe).
 */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
