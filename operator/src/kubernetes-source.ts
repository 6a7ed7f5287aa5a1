import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from '../../src/core/base/logger.js';
import {
  validateManifest,
  type DeclaredResource,
  type ResourceRef,
} from '../../src/core/flows/resources/manifest.schema.js';
import type { ResourceSource, SourceItem } from '../../src/core/flows/resources/ports.js';
import type { EventRecorder } from './events.js';
import { WatchedCollection } from './informer.js';
import { Finalizers, hasFinalizer } from './finalizers.js';
import { apiMessage, type CustomObject, type KubeClients } from './kube.js';
import type { KubernetesStatusSink } from './kubernetes-status-sink.js';
import { collectionPath, GROUP, PLURAL, VERSION, type DeclaredKind } from './names.js';

export interface KubernetesSourceOptions {
  /** Watch one namespace; undefined watches all (cluster-wide RBAC). */
  namespace?: string | undefined;
  /** How long `watch` waits for the first lists before letting the controller start anyway. */
  syncTimeoutMs?: number;
}

/**
 * Domains and Mailboxes from the API server, as the reconcile core's ResourceSource.
 *
 * Three informers (Domains, Mailboxes, Secrets) keep a cache; a change notice names the
 * resources to look at again, and the controller then reads the current object with `get`
 * (level-triggered). A Secret change names the Mailboxes whose passwordSecretRef points at it
 * (so a rotated password is applied) and the resource that owns it (so a deleted or edited
 * token Secret is written again).
 *
 * Deletion: `get` puts the finalizer on a live object before the first reconcile, so deleting
 * it leaves the object in place with a deletionTimestamp; `get` then returns it as `deleting`,
 * the core disables what it created, and `finalize` removes the finalizer.
 */
export class KubernetesResourceSource implements ResourceSource {
  readonly domains: WatchedCollection<CustomObject>;
  readonly mailboxes: WatchedCollection<CustomObject>;
  readonly secrets: WatchedCollection<V1Secret>;
  /** uid@generation of invalid specs already reported, so each is reported once. */
  private readonly reportedInvalid = new Set<string>();
  private readonly finalizers: Finalizers;
  /** `<namespace>/<secret>` → Mailboxes whose passwordSecretRef names it; rebuilt after Mailbox changes. */
  private passwordRefs: Map<string, ResourceRef[]> | null = null;

  constructor(
    clients: KubeClients,
    private readonly status: KubernetesStatusSink,
    private readonly events: EventRecorder,
    private readonly log: Logger,
    private readonly options: KubernetesSourceOptions = {},
  ) {
    const ns = options.namespace;
    const { custom, core, kc } = clients;
    this.finalizers = new Finalizers(custom);
    const customList = (plural: string) => () =>
      ns
        ? custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural })
        : custom.listCustomObjectForAllNamespaces({ group: GROUP, version: VERSION, resourcePlural: plural });
    this.domains = new WatchedCollection<CustomObject>(
      kc,
      collectionPath(GROUP, VERSION, PLURAL.Domain, ns),
      customList(PLURAL.Domain),
      'domains',
      log,
    );
    this.mailboxes = new WatchedCollection<CustomObject>(
      kc,
      collectionPath(GROUP, VERSION, PLURAL.Mailbox, ns),
      customList(PLURAL.Mailbox),
      'mailboxes',
      log,
    );
    this.secrets = new WatchedCollection<V1Secret>(
      kc,
      collectionPath('', 'v1', 'secrets', ns),
      () => (ns ? core.listNamespacedSecret({ namespace: ns }) : core.listSecretForAllNamespaces()),
      'secrets',
      log,
    );
  }

  /** The informers' copy of a Domain or Mailbox. */
  cached(ref: Pick<ResourceRef, 'kind' | 'namespace' | 'name'>): CustomObject | undefined {
    return this.collection(ref.kind as DeclaredKind).get(ref.name, ref.namespace);
  }

  async watch(onChange: (changed: ResourceRef[] | 'all') => void): Promise<{ close(): Promise<void> }> {
    for (const kind of ['Domain', 'Mailbox'] as const) {
      for (const verb of ['add', 'update', 'delete'] as const) {
        this.collection(kind).on(verb, (obj) => {
          if (kind === 'Mailbox') this.passwordRefs = null;
          onChange([refOfObject(kind, obj)]);
        });
      }
    }
    for (const verb of ['add', 'update', 'delete'] as const) {
      this.secrets.on(verb, (secret) => {
        const refs = this.dependentsOf(secret);
        if (refs.length) onChange(refs);
      });
    }
    const timeout = this.options.syncTimeoutMs ?? 30_000;
    // Mailboxes first: the Secret informer's first events look mailboxes up.
    const synced = await Promise.all([this.domains.start(timeout), this.mailboxes.start(timeout)]);
    await this.secrets.start(timeout);
    // Not synced yet (API server unreachable): the informers keep retrying, and their first
    // list emits an `add` per object, which enqueues everything then.
    if (!synced.every(Boolean)) this.log.warn('operator.cache_not_synced', { timeoutMs: timeout });
    return { close: () => this.close() };
  }

  /** Stops the informers (idempotent). */
  async close(): Promise<void> {
    await Promise.all([this.domains.stop(), this.mailboxes.stop(), this.secrets.stop()]);
  }

  async list(): Promise<SourceItem[]> {
    if (!this.domains.isSynced || !this.mailboxes.isSynced)
      throw new Error('the Domain and Mailbox caches are not synced yet');
    const items: SourceItem[] = [];
    for (const kind of ['Domain', 'Mailbox'] as const) {
      for (const obj of this.collection(kind).list()) {
        const item = this.toItem(kind, obj);
        if (item) items.push(item);
      }
    }
    return items;
  }

  async get(ref: ResourceRef): Promise<SourceItem | null> {
    const obj = this.cached(ref);
    if (!obj) return null;
    const item = this.toItem(ref.kind as DeclaredKind, obj);
    if (item?.resource) await this.finalizers.ensure(ref.kind as DeclaredKind, obj);
    return item;
  }

  /** The core disabled what the resource created: release the object. */
  async finalize(ref: ResourceRef): Promise<void> {
    const released = await this.finalizers.release(ref.kind as DeclaredKind, ref.namespace, ref.name);
    if (!released) return;
    this.status.forget(ref);
    await this.events.emit(
      { kind: ref.kind, namespace: ref.namespace, name: ref.name, uid: released.metadata.uid },
      'Normal',
      'Finalized',
      'disabled what this resource created and released its finalizer',
    );
  }

  private toItem(kind: DeclaredKind, obj: CustomObject): SourceItem | null {
    const ref = refOfObject(kind, obj);
    if (obj.metadata.deletionTimestamp) {
      if (!hasFinalizer(obj)) return null;
      const spec = obj.spec as { tokenSecretName?: unknown } | undefined;
      const statusName = (obj.status as { tokenSecretName?: unknown } | undefined)?.tokenSecretName;
      const declared =
        typeof statusName === 'string'
          ? statusName
          : typeof spec?.tokenSecretName === 'string'
            ? spec.tokenSecretName
            : undefined;
      return {
        ref,
        deleting: {
          tokenSecretName: declared ?? `${obj.metadata.name}-${kind === 'Domain' ? 'domain' : 'mailbox'}-token`,
        },
      };
    }
    const parsed = validateManifest({ apiVersion: obj.apiVersion, kind, metadata: obj.metadata, spec: obj.spec });
    if (parsed.ok) return { ref, resource: parsed.manifest as DeclaredResource };
    void this.reportInvalid(ref, obj, parsed.issues);
    return null;
  }

  /**
   * The CRD schema rejects most mistakes; what only the core checks (an alias outside the
   * mailbox's domain …) is reported here, as Ready False `InvalidSpec`, once per generation.
   * The core's status memory cannot go stale through this: fixing the spec bumps the generation,
   * so the next reconcile's status differs and is written.
   */
  private async reportInvalid(ref: ResourceRef, obj: CustomObject, issues: string[]): Promise<void> {
    const key = `${obj.metadata.uid}@${obj.metadata.generation}`;
    if (this.reportedInvalid.has(key)) return;
    this.reportedInvalid.add(key);
    const message = issues.join('; ');
    this.log.warn('resource.manifest_invalid', { kind: ref.kind, namespace: ref.namespace, name: ref.name, message });
    try {
      await this.status.report(ref, {
        observedGeneration: obj.metadata.generation ?? null,
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'InvalidSpec',
            message,
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      });
    } catch (err) {
      this.reportedInvalid.delete(key);
      this.log.warn('resource.status_failed', {
        kind: ref.kind,
        namespace: ref.namespace,
        name: ref.name,
        message: apiMessage(err),
      });
    }
  }

  /** Mailboxes whose password lives in this Secret, and the resource that owns it. */
  private dependentsOf(secret: V1Secret): ResourceRef[] {
    const namespace = secret.metadata?.namespace;
    const name = secret.metadata?.name;
    if (!namespace || !name) return [];
    // An index, not a scan: at start every Secret of the cluster arrives as an `add`.
    this.passwordRefs ??= this.indexPasswordRefs();
    const refs: ResourceRef[] = [...(this.passwordRefs.get(`${namespace}/${name}`) ?? [])];
    for (const owner of secret.metadata?.ownerReferences ?? []) {
      if (owner.apiVersion.startsWith(`${GROUP}/`) && (owner.kind === 'Domain' || owner.kind === 'Mailbox'))
        refs.push({ kind: owner.kind, namespace, name: owner.name, uid: owner.uid });
    }
    return refs;
  }

  private indexPasswordRefs(): Map<string, ResourceRef[]> {
    const index = new Map<string, ResourceRef[]>();
    for (const mailbox of this.mailboxes.list()) {
      const secretName = (mailbox.spec as { passwordSecretRef?: { name?: unknown } } | undefined)?.passwordSecretRef
        ?.name;
      if (typeof secretName !== 'string') continue;
      const key = `${mailbox.metadata.namespace}/${secretName}`;
      index.set(key, [...(index.get(key) ?? []), refOfObject('Mailbox', mailbox)]);
    }
    return index;
  }

  private collection(kind: DeclaredKind): WatchedCollection<CustomObject> {
    return kind === 'Domain' ? this.domains : this.mailboxes;
  }
}

function refOfObject(kind: DeclaredKind, obj: CustomObject): ResourceRef {
  return { kind, namespace: obj.metadata.namespace, name: obj.metadata.name, uid: obj.metadata.uid };
}
