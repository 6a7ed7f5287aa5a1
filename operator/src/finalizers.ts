import type { CustomObjectsApi } from '@kubernetes/client-node';
import { isNotFound, MERGE_PATCH, retryOnConflict, type CustomObject } from './kube.js';
import { FINALIZER, GROUP, PLURAL, VERSION, type DeclaredKind } from './names.js';

export const hasFinalizer = (obj: CustomObject): boolean => (obj.metadata.finalizers ?? []).includes(FINALIZER);

/**
 * Our finalizer on Domains and Mailboxes. Both changes read the object afresh and patch
 * `metadata.finalizers` on condition of the resourceVersion read (a merge patch replaces the whole
 * list, so another controller's finalizer added meanwhile would otherwise be lost); a 409 means
 * someone else wrote first, and the change is tried again on a new read.
 */
export class Finalizers {
  constructor(private readonly custom: CustomObjectsApi) {}

  /** Before the first reconcile: from then on a deletion waits for our cleanup. */
  async ensure(kind: DeclaredKind, cached: CustomObject): Promise<void> {
    if (hasFinalizer(cached)) return;
    await retryOnConflict('finalizer.add', async () => {
      const obj = await this.read(kind, cached.metadata.namespace, cached.metadata.name);
      if (!obj || obj.metadata.deletionTimestamp || hasFinalizer(obj)) return;
      await this.patch(kind, obj, [...(obj.metadata.finalizers ?? []), FINALIZER]);
    });
  }

  /** After the cleanup: the object that was released, or null when there was nothing of ours to release. */
  async release(kind: DeclaredKind, namespace: string, name: string): Promise<CustomObject | null> {
    return retryOnConflict('finalizer.remove', async () => {
      const obj = await this.read(kind, namespace, name);
      // Gone, or deleted and created again under the same name: nothing of ours to release.
      if (!obj?.metadata.deletionTimestamp || !hasFinalizer(obj)) return null;
      await this.patch(
        kind,
        obj,
        (obj.metadata.finalizers ?? []).filter((f) => f !== FINALIZER),
      );
      return obj;
    });
  }

  private async patch(kind: DeclaredKind, obj: CustomObject, finalizers: string[]): Promise<void> {
    await this.custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL[kind],
        namespace: obj.metadata.namespace,
        name: obj.metadata.name,
        body: { metadata: { resourceVersion: obj.metadata.resourceVersion, finalizers } },
      },
      MERGE_PATCH,
    );
  }

  private async read(kind: DeclaredKind, namespace: string, name: string): Promise<CustomObject | null> {
    try {
      return (await this.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: PLURAL[kind],
        namespace,
        name,
      })) as CustomObject;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }
}
