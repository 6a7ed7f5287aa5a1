import type { CoreV1Api, V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import type { ResourceRef, SecretStore } from '../../src/core/flows/resources/ports.js';
import type { EventRecorder } from './events.js';
import { API_VERSION, COMPONENT, MANAGED_BY_LABEL } from './names.js';
import { isNotFound, retryOnConflict } from './kube.js';

/**
 * The reconcile core's SecretStore on Kubernetes Secrets. Reads go to the API server (not a
 * cache), so a password Secret edited a moment ago is what the reconcile sees. Writes carry a
 * controller ownerReference to the Domain or Mailbox, so the garbage collector removes them with
 * it even if the finalizer never ran; a write that meets a concurrent change (409) reads again
 * and retries.
 */
export class KubernetesSecretStore implements SecretStore {
  constructor(
    private readonly core: CoreV1Api,
    private readonly events?: EventRecorder,
  ) {}

  async get(namespace: string, name: string): Promise<Record<string, string> | null> {
    const secret = await this.read(namespace, name);
    return secret ? decode(secret) : null;
  }

  async put(namespace: string, name: string, data: Record<string, string>, owner: ResourceRef): Promise<void> {
    const ownerRef = controllerRef(owner);
    const outcome = await retryOnConflict('secret.put', async () => {
      const current = await this.read(namespace, name);
      if (!current) {
        const body: V1Secret = {
          metadata: { name, namespace, labels: { [MANAGED_BY_LABEL]: COMPONENT }, ownerReferences: [ownerRef] },
          type: 'Opaque',
          stringData: data,
        };
        // Someone created it since our read: 409 AlreadyExists, and the retry replaces it.
        await this.core.createNamespacedSecret({ namespace, body });
        return 'created';
      }
      const others = (current.metadata?.ownerReferences ?? []).filter((r) => r.uid !== ownerRef.uid);
      const rival = others.find((r) => r.controller);
      if (rival)
        throw new Error(
          `secret ${namespace}/${name} is controlled by ${rival.kind} ${rival.name}; choose another tokenSecretName`,
        );
      const body: V1Secret = {
        ...current,
        metadata: {
          ...current.metadata,
          labels: { ...current.metadata?.labels, [MANAGED_BY_LABEL]: COMPONENT },
          ownerReferences: [...others, ownerRef],
        },
        // The whole data is replaced: the core's secret is exactly these keys.
        data: encode(data),
        stringData: undefined,
      };
      await this.core.replaceNamespacedSecret({ namespace, name, body });
      return 'updated';
    });
    void this.events?.emit(
      { kind: owner.kind, namespace: owner.namespace, name: owner.name, uid: owner.uid },
      'Normal',
      'SecretWritten',
      `${outcome} Secret ${name}`,
    );
  }

  async delete(namespace: string, name: string): Promise<void> {
    try {
      await this.core.deleteNamespacedSecret({ namespace, name });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  private async read(namespace: string, name: string): Promise<V1Secret | null> {
    try {
      return await this.core.readNamespacedSecret({ namespace, name });
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }
}

/** The ownerReference the garbage collector follows; needs the owner's uid (set by the API server). */
export function controllerRef(owner: ResourceRef): V1OwnerReference & { uid: string } {
  if (!owner.uid) throw new Error(`${owner.kind} ${owner.namespace}/${owner.name} has no uid; cannot own a Secret`);
  return {
    apiVersion: API_VERSION,
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

function decode(secret: V1Secret): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  return { ...out, ...(secret.stringData ?? {}) };
}

function encode(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
}
