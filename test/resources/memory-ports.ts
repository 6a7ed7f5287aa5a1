import type { ResourceRef, ResourceStatus, SecretStore, StatusSink } from '../../src/core/flows/resources/ports.js';
import { parseManifests } from '../../src/core/flows/resources/manifest-loader.js';
import type { DomainResource, MailboxResource } from '../../src/core/flows/resources/manifest.schema.js';

/**
 * In-memory implementations of the ports, as the operator implements them against Kubernetes:
 * the reconciler is exercised without any file involved.
 */
export class MemorySecretStore implements SecretStore {
  readonly data = new Map<string, Record<string, string>>();
  readonly owners = new Map<string, ResourceRef>();
  puts = 0;
  async get(namespace: string, name: string) {
    return this.data.get(`${namespace}/${name}`) ?? null;
  }
  async put(namespace: string, name: string, data: Record<string, string>, owner: ResourceRef) {
    this.puts++;
    this.data.set(`${namespace}/${name}`, { ...data });
    this.owners.set(`${namespace}/${name}`, owner);
  }
  async delete(namespace: string, name: string) {
    this.data.delete(`${namespace}/${name}`);
  }
}

export class MemoryStatusSink implements StatusSink {
  readonly reports: Array<{ ref: ResourceRef; status: ResourceStatus }> = [];
  async report(ref: ResourceRef, status: ResourceStatus) {
    this.reports.push({ ref, status });
  }
  last(name: string): ResourceStatus | undefined {
    return [...this.reports].reverse().find((r) => r.ref.name === name)?.status;
  }
}

/** Builds one resource from YAML, as a manifest file or the Kubernetes API would carry it. */
export function domainResource(
  name: string,
  spec: Record<string, unknown>,
  metadata: Record<string, unknown> = {},
): DomainResource {
  return parseOne({
    apiVersion: 'mailbox-service.dev/v1alpha1',
    kind: 'Domain',
    metadata: { name, ...metadata },
    spec,
  }) as DomainResource;
}

export function mailboxResource(
  name: string,
  spec: Record<string, unknown>,
  metadata: Record<string, unknown> = {},
): MailboxResource {
  return parseOne({
    apiVersion: 'mailbox-service.dev/v1alpha1',
    kind: 'Mailbox',
    metadata: { name, ...metadata },
    spec,
  }) as MailboxResource;
}

function parseOne(obj: unknown) {
  const { manifests, errors } = parseManifests(JSON.stringify(obj), 'inline');
  if (errors.length) throw new Error(errors.map((e) => e.message).join('; '));
  return manifests[0]!.manifest;
}
