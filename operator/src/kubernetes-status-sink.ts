import type { CustomObjectsApi } from '@kubernetes/client-node';
import { refId, type ResourceRef } from '../../src/core/flows/resources/manifest.schema.js';
import type { Condition, ResourceStatus, StatusSink } from '../../src/core/flows/resources/ports.js';
import type { EventRecorder } from './events.js';
import { GROUP, PLURAL, VERSION, type DeclaredKind } from './names.js';
import { isNotFound, MERGE_PATCH, type CustomObject } from './kube.js';

/** Status keys the core owns; absent ones are cleared (a merge patch would otherwise keep them). */
const CORE_KEYS = ['domainId', 'mailboxId', 'tokenSecretName'] as const;

/**
 * The reconcile core's StatusSink on the status subresource: a JSON merge patch of `status`
 * only, so the operator never writes `spec` or `metadata` there. The core calls `report` only
 * when the status changed; a change of the Ready status or reason also becomes an Event
 * (Normal when Ready, Warning otherwise).
 */
export class KubernetesStatusSink implements StatusSink {
  private readonly lastReady = new Map<string, Pick<Condition, 'status' | 'reason'>>();

  constructor(
    private readonly custom: CustomObjectsApi,
    private readonly events: EventRecorder,
    /** The informer's copy of the object, for `read` (previous status, lastTransitionTime) and Events. */
    private readonly cached: (ref: ResourceRef) => CustomObject | undefined,
  ) {}

  async report(ref: ResourceRef, status: ResourceStatus): Promise<void> {
    const body: Record<string, unknown> = { ...status };
    for (const key of CORE_KEYS) if (!(key in status)) body[key] = null;
    // Read before writing: our own patch may reach the informer's cache before its answer reaches us.
    const id = refId(ref);
    const before = this.lastReady.get(id) ?? readyOf(this.cached(ref)?.status);
    try {
      await this.custom.patchNamespacedCustomObjectStatus(
        {
          group: GROUP,
          version: VERSION,
          plural: PLURAL[ref.kind as DeclaredKind],
          namespace: ref.namespace,
          name: ref.name,
          body: { status: body },
        },
        MERGE_PATCH,
      );
    } catch (err) {
      if (isNotFound(err)) return; // deleted meanwhile: nothing to report on
      throw err;
    }
    const ready = status.conditions.find((c) => c.type === 'Ready');
    if (!ready) return;
    this.lastReady.set(id, { status: ready.status, reason: ready.reason });
    if (before && before.status === ready.status && before.reason === ready.reason) return;
    const obj = this.cached(ref);
    await this.events.emit(
      { kind: ref.kind, namespace: ref.namespace, name: ref.name, uid: ref.uid ?? obj?.metadata.uid },
      ready.status === 'True' ? 'Normal' : 'Warning',
      ready.reason,
      ready.message,
    );
  }

  async read(ref: ResourceRef): Promise<ResourceStatus | null> {
    const status = this.cached(ref)?.status as Partial<ResourceStatus> | undefined;
    if (!status || !Array.isArray(status.conditions)) return null;
    // Same key order as the core builds, so an unchanged status compares equal after a failover
    // (the API server returns object keys sorted) and is not patched again.
    const conditions = status.conditions.map((c: Condition): Condition => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      lastTransitionTime: c.lastTransitionTime,
    }));
    const out: ResourceStatus = { observedGeneration: status.observedGeneration ?? null, conditions };
    for (const key of CORE_KEYS) if (typeof status[key] === 'string') out[key] = status[key];
    return out;
  }

  forget(ref: ResourceRef): void {
    this.lastReady.delete(refId(ref));
  }
}

function readyOf(status: Record<string, unknown> | undefined): Pick<Condition, 'status' | 'reason'> | undefined {
  const conditions = status?.conditions;
  return Array.isArray(conditions) ? (conditions as Condition[]).find((c) => c.type === 'Ready') : undefined;
}
