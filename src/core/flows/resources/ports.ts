/**
 * The seams of the reconcile core. The file implementations live next to this file; the
 * Kubernetes operator implements the same three against the API server and reuses everything
 * else (schemas, ResourceReconciler, ResourceController) unchanged.
 */
import type { DeclaredResource, ResourceRef } from './manifest.schema.js';

export type { ResourceRef } from './manifest.schema.js';

/** Key/value secrets, shaped like a Kubernetes Secret's decoded `data`. */
export interface SecretStore {
  /** The secret's data, or null when it does not exist. */
  get(namespace: string, name: string): Promise<Record<string, string> | null>;
  /**
   * Creates or replaces the secret. `owner` is the resource it belongs to (Kubernetes: the
   * owner reference, so deleting the resource garbage-collects the secret).
   */
  put(namespace: string, name: string, data: Record<string, string>, owner: ResourceRef): Promise<void>;
  /** Removes a secret this core wrote; stores whose platform collects owned objects may omit it. */
  delete?(namespace: string, name: string): Promise<void>;
}

export type ConditionStatus = 'True' | 'False';

/** A Kubernetes-style condition; only `Ready` is used. */
export interface Condition {
  type: 'Ready';
  status: ConditionStatus;
  /** UpperCamelCase, stable: Reconciled, DomainNotFound, AddressConflict, SecretNotFound… */
  reason: string;
  message: string;
  /** RFC 3339; changes only when `status` or `reason` changes. */
  lastTransitionTime: string;
}

export interface ResourceStatus {
  /** `metadata.generation` this status describes (null when the source has no generations). */
  observedGeneration: number | null;
  conditions: Condition[];
  domainId?: string;
  mailboxId?: string;
  /** Where the token was written, so a user (and deletion) can find it. */
  tokenSecretName?: string;
  /** Domain only: the DNS TXT record that publishes its DKIM key (mail transport). */
  dkim?: DkimStatus;
}

/** Where and what to publish so receivers can verify the domain's DKIM signatures (RFC 6376 §3.6.2.1). */
export interface DkimStatus {
  selector: string;
  name: string;
  type: 'TXT';
  value: string;
}

/** Where status goes: the status subresource in Kubernetes, a JSON file otherwise. */
export interface StatusSink {
  report(ref: ResourceRef, status: ResourceStatus): Promise<void>;
  /** The last reported status, so a restarted process keeps `lastTransitionTime`. */
  read?(ref: ResourceRef): Promise<ResourceStatus | null>;
}

/** One entry of a source's listing: a live resource, or one whose deletion is pending. */
export type SourceItem =
  | { ref: ResourceRef; resource: DeclaredResource; deleting?: undefined }
  | { ref: ResourceRef; resource?: undefined; deleting: { tokenSecretName?: string | undefined } };

/**
 * Where declared resources come from. The controller is level-triggered: a change notice only
 * says "look again"; it then reads the current object with `get`.
 */
export interface ResourceSource {
  /** Every declared resource now, plus deletions still to carry out (startup and resync). */
  list(): Promise<SourceItem[]>;
  /** The current state of one resource; null when it is gone and nothing is left to clean up. */
  get(ref: ResourceRef): Promise<SourceItem | null>;
  /** Starts change notices: specific refs, or 'all' (then the controller lists again). */
  watch(onChange: (changed: ResourceRef[] | 'all') => void): Promise<{ close(): Promise<void> }>;
  /** A deletion was carried out (Kubernetes: drop the finalizer; files: forget the entry). */
  finalize(ref: ResourceRef): Promise<void>;
}

export type ReconcileOutcome = 'created' | 'updated' | 'unchanged' | 'deleted' | 'failed';

/** What one reconcile did and whether the resource is Ready; the controller retries when not. */
export interface ReconcileResult {
  ref: ResourceRef;
  outcome: ReconcileOutcome;
  ready: boolean;
  reason: string;
  message: string;
  domainId?: string;
  mailboxId?: string;
  dkim?: DkimStatus;
}
