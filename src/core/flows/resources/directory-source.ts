import { watch as fsWatch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import type { Logger } from '../../base/logger.js';
import { refId, refOf, type ResourceRef, type SecretManifest } from './manifest.schema.js';
import { formatManifestError, loadManifests, type ManifestSet } from './manifest-loader.js';
import { writeSecretManifest, type FileSecretStore } from './file-secret-store.js';
import type { FileStatusStore } from './file-status-store.js';
import type { ResourceSource, SourceItem } from './ports.js';

/**
 * MAILBOX_RESOURCES_DIR as a source. Any change under the directory (or under the file secret
 * store, where a password secret may be edited by hand) makes the controller list again; a
 * listing reads every manifest, so it is level-triggered by construction.
 *
 * Deletion: a Domain or Mailbox that this source applied (it has a status file from this
 * source) and that no manifest declares any more is listed as deleting. Only a complete listing
 * may conclude that: while any manifest is unreadable or invalid, nothing is deleted, so saving a
 * file with a typo never disables its mailboxes.
 */
export class DirectorySource implements ResourceSource {
  private items = new Map<string, SourceItem>();
  private lastErrors = '';

  constructor(
    private readonly dir: string,
    private readonly secrets: FileSecretStore,
    private readonly status: FileStatusStore,
    private readonly log: Logger,
    private readonly options: { debounceMs: number } = { debounceMs: 200 },
  ) {}

  async list(): Promise<SourceItem[]> {
    const set = await loadManifests(this.dir);
    this.reportErrors(set);
    for (const secret of set.secrets) await this.materialize(secret);
    const items = new Map<string, SourceItem>();
    for (const resource of [...set.domains, ...set.mailboxes])
      items.set(refId(refOf(resource)), { ref: refOf(resource), resource });
    if (set.complete) {
      for (const { ref, status } of await this.status.entries()) {
        if (!items.has(refId(ref)))
          items.set(refId(ref), { ref, deleting: { tokenSecretName: status.tokenSecretName } });
      }
    } else {
      // Keep pending deletions known from a complete listing; add none from this one.
      for (const [id, item] of this.items) if (item.deleting && !items.has(id)) items.set(id, item);
    }
    this.items = items;
    return [...items.values()];
  }

  async get(ref: ResourceRef): Promise<SourceItem | null> {
    return this.items.get(refId(ref)) ?? null;
  }

  async finalize(ref: ResourceRef): Promise<void> {
    await this.status.remove(ref);
    this.items.delete(refId(ref));
  }

  async watch(onChange: (changed: ResourceRef[] | 'all') => void): Promise<{ close(): Promise<void> }> {
    let timer: NodeJS.Timeout | null = null;
    const changed = () => {
      if (timer) clearTimeout(timer);
      // Editors write a file in several steps; one relist after the burst settles.
      timer = setTimeout(() => {
        timer = null;
        onChange('all');
      }, this.options.debounceMs);
      timer.unref();
    };
    await mkdir(this.secrets.root, { recursive: true, mode: 0o700 });
    const watchers: FSWatcher[] = [];
    for (const dir of [this.dir, this.secrets.root]) {
      try {
        const w = fsWatch(dir, { recursive: true, persistent: false }, changed);
        w.on('error', (err) => this.log.warn('resources.watch_error', { dir, err }));
        watchers.push(w);
      } catch (err) {
        // A missing directory is not fatal: the periodic resync still lists it once it exists.
        this.log.warn('resources.watch_unavailable', { dir, message: (err as Error).message });
      }
    }
    return {
      close: async () => {
        if (timer) clearTimeout(timer);
        watchers.forEach((w) => w.close());
      },
    };
  }

  /** A Secret manifest is written to the file secret store (only when its content differs). */
  private async materialize(secret: SecretManifest): Promise<void> {
    const { namespace, name } = secret.metadata;
    try {
      const outcome = await writeSecretManifest(this.secrets, secret);
      if (outcome !== 'unchanged') this.log.info('resource.secret_written', { namespace, name, outcome });
    } catch (err) {
      this.log.warn('resource.secret_failed', { namespace, name, err });
    }
  }

  /** Logs manifest errors once per distinct set, not on every resync. */
  private reportErrors(set: ManifestSet): void {
    const text = set.errors.map(formatManifestError).join('\n');
    if (text === this.lastErrors) return;
    this.lastErrors = text;
    for (const e of set.errors)
      this.log.warn('resource.manifest_invalid', {
        file: e.file,
        document: e.document,
        line: e.line,
        message: e.message,
      });
    if (set.errors.length > 0) this.log.warn('resources.prune_paused', { dir: this.dir, invalid: set.errors.length });
  }
}
