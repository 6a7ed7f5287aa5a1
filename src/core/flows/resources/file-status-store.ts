import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../base/logger.js';
import { API_VERSION, isNamespaceName, isObjectName, type ResourceKind, type ResourceRef } from './manifest.schema.js';
import { readJsonFile, writeFileAtomic } from './atomic-file.js';
import type { ResourceStatus, StatusSink } from './ports.js';

interface StatusFile {
  apiVersion: string;
  kind: ResourceKind;
  metadata: { namespace: string; name: string };
  /** Which source applied the resource (`dir:<path>` or `apply:<path>`); a source prunes only its own. */
  source: string;
  status: ResourceStatus;
}

/**
 * Status without Kubernetes: `<data dir>/status/<namespace>/<kind>-<name>.json`, shaped like the
 * object's status subresource, and one log line per change. The files double as the directory
 * source's inventory: a resource with a status file from this source but no manifest any more
 * was deleted.
 */
export class FileStatusStore implements StatusSink {
  constructor(
    readonly root: string,
    private readonly source: string,
    private readonly log: Logger,
  ) {}

  private pathOf(ref: ResourceRef): string {
    if (!isNamespaceName(ref.namespace) || !isObjectName(ref.name))
      throw new Error(`invalid name ${ref.namespace}/${ref.name}`);
    return path.join(this.root, ref.namespace, `${ref.kind.toLowerCase()}-${ref.name}.json`);
  }

  async report(ref: ResourceRef, status: ResourceStatus): Promise<void> {
    const body: StatusFile = {
      apiVersion: API_VERSION,
      kind: ref.kind,
      metadata: { namespace: ref.namespace, name: ref.name },
      source: this.source,
      status,
    };
    await writeFileAtomic(this.pathOf(ref), JSON.stringify(body, null, 2) + '\n', 0o644);
    const ready = status.conditions.find((c) => c.type === 'Ready');
    const fields = {
      kind: ref.kind,
      namespace: ref.namespace,
      name: ref.name,
      ready: ready?.status,
      reason: ready?.reason,
      message: ready?.message,
    };
    if (ready?.status === 'True') this.log.info('resource.status', fields);
    else this.log.warn('resource.status', fields);
  }

  async read(ref: ResourceRef): Promise<ResourceStatus | null> {
    const file = (await readJsonFile(this.pathOf(ref)).catch(() => null)) as StatusFile | null;
    return file?.status ?? null;
  }

  async remove(ref: ResourceRef): Promise<void> {
    await rm(this.pathOf(ref), { force: true });
  }

  /** Every resource this source has reported on, with its last status. */
  async entries(): Promise<Array<{ ref: ResourceRef; status: ResourceStatus }>> {
    const out: Array<{ ref: ResourceRef; status: ResourceStatus }> = [];
    const namespaces = await readdir(this.root).catch(() => [] as string[]);
    for (const namespace of namespaces.filter(isNamespaceName)) {
      for (const name of await readdir(path.join(this.root, namespace)).catch(() => [] as string[])) {
        if (!name.endsWith('.json') || name.startsWith('.')) continue;
        const file = (await readJsonFile(path.join(this.root, namespace, name)).catch(() => null)) as StatusFile | null;
        if (!file || file.source !== this.source || (file.kind !== 'Domain' && file.kind !== 'Mailbox')) continue;
        out.push({ ref: { kind: file.kind, namespace, name: file.metadata.name }, status: file.status });
      }
    }
    return out;
  }
}
