import type { CustomObjectsApi } from '@kubernetes/client-node';
import type { Logger } from '../../src/core/base/logger.js';
import type { DkimKeys } from '../../src/core/flows/outbound/dkim-keys.js';
import type { ReconcileResult, ResourceRef, SecretStore } from '../../src/core/flows/resources/ports.js';
import type { EventRecorder } from './events.js';
import { apiMessage, isNotFound, MERGE_PATCH } from './kube.js';
import { GROUP, PLURAL, VERSION } from './names.js';

/** `<Domain name>-dkim`, recorded in the Domain's `status.dkimSecretName`. */
export const dkimSecretNameOf = (domainName: string): string => `${domainName}-dkim`;

/**
 * The Domain's DKIM key as a Secret, next to its token Secret: the selector, the TXT record the
 * domain must publish (`dnsName`, `dnsValue`), and the key pair. The core generates the key on
 * first use and signs with its encrypted database copy; the Secret is how a cluster user reads
 * the record to publish (and keeps a backup), with the same owner, RBAC and lifetime as the
 * domain token. Written after every Ready reconcile of a Domain, only when its content differs.
 */
export class DkimSecrets {
  constructor(
    private readonly dkim: DkimKeys,
    private readonly secrets: SecretStore,
    private readonly custom: CustomObjectsApi,
    private readonly events: EventRecorder,
    private readonly log: Logger,
  ) {}

  async afterDomain(result: ReconcileResult): Promise<void> {
    const { ref } = result;
    const name = dkimSecretNameOf(ref.name);
    try {
      if (result.reason === 'Deleted') {
        await this.secrets.delete?.(ref.namespace, name);
        return;
      }
      if (!result.ready || !result.domainId) return;
      const key = await this.dkim.forDomain(result.domainId);
      const record = await this.dkim.record(result.domainId);
      const data = {
        selector: key.selector,
        dnsName: record.name,
        dnsValue: record.value,
        publicKey: key.publicKey,
        privateKey: key.privateKeyPem,
      };
      const held = await this.secrets.get(ref.namespace, name);
      if (held && Object.keys(data).every((k) => held[k] === data[k as keyof typeof data])) return;
      await this.secrets.put(ref.namespace, name, data, ref);
      await this.recordInStatus(ref, name);
      this.log.info('resource.dkim_secret_written', {
        namespace: ref.namespace,
        name: ref.name,
        secret: name,
        selector: key.selector,
      });
    } catch (err) {
      // The domain itself is Ready; the next pass (watch event or resync) tries again.
      const message = err instanceof Error ? apiMessage(err) : String(err);
      this.log.warn('resource.dkim_secret_failed', { namespace: ref.namespace, name: ref.name, message });
      await this.events.emit(
        { kind: 'Domain', namespace: ref.namespace, name: ref.name, uid: ref.uid },
        'Warning',
        'DkimSecretFailed',
        message,
      );
    }
  }

  /** A separate merge patch: the core's status patches never touch this key, so it stays. */
  private async recordInStatus(ref: ResourceRef, secretName: string): Promise<void> {
    try {
      await this.custom.patchNamespacedCustomObjectStatus(
        {
          group: GROUP,
          version: VERSION,
          plural: PLURAL.Domain,
          namespace: ref.namespace,
          name: ref.name,
          body: { status: { dkimSecretName: secretName } },
        },
        MERGE_PATCH,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
