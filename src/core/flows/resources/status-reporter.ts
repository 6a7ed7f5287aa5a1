import type { Logger } from '../../base/logger.js';
import type { Clock } from '../../base/time.js';
import { refId, type ResourceRef } from './manifest.schema.js';
import type { Condition, ReconcileResult, ResourceStatus, StatusSink } from './ports.js';

/**
 * Turns reconcile results into status and hands it to the sink only when it changed, so a
 * periodic resync does not rewrite every status (or patch every object) each time.
 * `lastTransitionTime` moves only when the Ready status or reason changes.
 */
export class StatusReporter {
  private readonly last = new Map<string, ResourceStatus>();

  constructor(
    private readonly sink: StatusSink,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  async report(
    ref: ResourceRef,
    generation: number | null,
    result: ReconcileResult,
    tokenSecretName: string,
  ): Promise<void> {
    const id = refId(ref);
    try {
      const previous = this.last.get(id) ?? (await this.sink.read?.(ref)) ?? null;
      const before = previous?.conditions.find((c) => c.type === 'Ready');
      const status = result.ready ? 'True' : 'False';
      const ready: Condition = {
        type: 'Ready',
        status,
        reason: result.reason,
        message: result.message,
        lastTransitionTime:
          before && before.status === status && before.reason === result.reason
            ? before.lastTransitionTime
            : this.clock.now().toISOString(),
      };
      const next: ResourceStatus = {
        observedGeneration: generation,
        conditions: [ready],
        ...(result.domainId ? { domainId: result.domainId } : {}),
        ...(result.mailboxId ? { mailboxId: result.mailboxId } : {}),
        tokenSecretName,
        ...(result.dkim ? { dkim: result.dkim } : {}),
      };
      if (previous && JSON.stringify(previous) === JSON.stringify(next)) {
        this.last.set(id, next);
        return;
      }
      await this.sink.report(ref, next);
      this.last.set(id, next);
    } catch (err) {
      // Status is best effort: the rows and secrets already converged; the next pass retries.
      this.log.warn('resource.status_failed', { kind: ref.kind, namespace: ref.namespace, name: ref.name, err });
    }
  }

  forget(ref: ResourceRef): void {
    this.last.delete(refId(ref));
  }
}
