import { API_VERSION } from '../../src/core/flows/resources/manifest.schema.js';

/** docs/contract.md, Names: group `mailbox-service.dev`, version `v1alpha1`, namespaced kinds Domain and Mailbox. */
export const GROUP = 'mailbox-service.dev';
export const VERSION = 'v1alpha1';
export { API_VERSION };
export type DeclaredKind = 'Domain' | 'Mailbox';
export const PLURAL: Record<DeclaredKind, string> = { Domain: 'domains', Mailbox: 'mailboxes' };

/** Held on every Domain and Mailbox the operator reconciled, so deleting one waits for its cleanup. */
export const FINALIZER = 'mailbox-service.dev/cleanup';
/** Event source, field manager and `app.kubernetes.io/managed-by` value. */
export const COMPONENT = 'mailbox-operator';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';

/** API path of a collection, in one namespace or in all of them (watch paths of the informers). */
export function collectionPath(group: string, version: string, plural: string, namespace?: string): string {
  const base = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
  return namespace ? `${base}/namespaces/${namespace}/${plural}` : `${base}/${plural}`;
}
