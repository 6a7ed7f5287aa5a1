import path from 'node:path';
import type { BaseServices } from '../../base/services.js';
import type { AccessServices } from '../../access/services.js';
import type { FlowServices } from '../services.js';
import type { Logger } from '../../base/logger.js';
import { FileSecretStore } from './file-secret-store.js';
import { FileStatusStore } from './file-status-store.js';
import { DirectorySource } from './directory-source.js';
import { DEFAULT_CONTROLLER_OPTIONS, ResourceController, type ControllerOptions } from './controller.js';
import { ResourceReconciler } from './reconciler.js';
import type { SecretStore, StatusSink } from './ports.js';

/** The reconciler wired to the core services; the operator calls this with its Kubernetes stores. */
export function createReconciler(
  services: Pick<BaseServices, 'db' | 'clock' | 'log' | 'config'> &
    Pick<AccessServices, 'tokens' | 'tokenMinter'> &
    Partial<Pick<FlowServices, 'transport'>>,
  secrets: SecretStore,
  status: StatusSink,
): ResourceReconciler {
  return new ResourceReconciler({
    ...(services.transport ? { dkim: services.transport.dkim } : {}),
    db: services.db,
    tokens: services.tokens,
    minter: services.tokenMinter,
    clock: services.clock,
    log: services.log,
    secrets,
    status,
    domainTokenTtlMs: services.config.TOKEN_DEFAULT_TTL,
    mailboxTokenTtlMs: services.config.BOOTSTRAP_TOKEN_TTL,
  });
}

/** The file stores under the data dir (docs/contract.md: `<data dir>/secrets/<namespace>/<name>.json`). */
export function fileStores(
  dataDir: string,
  source: string,
  log: Logger,
): { secrets: FileSecretStore; status: FileStatusStore } {
  return {
    secrets: new FileSecretStore(path.join(dataDir, 'secrets')),
    status: new FileStatusStore(path.join(dataDir, 'status'), source, log),
  };
}

export interface ResourceDirectoryOptions extends Partial<ControllerOptions> {
  /** Quiet period after a file change before relisting. */
  debounceMs?: number;
}

/**
 * Applies manifests from MAILBOX_RESOURCES_DIR at start (resolves once that first pass is done;
 * failures are logged and retried, never thrown) and again whenever something changes.
 */
export async function startResourceDirectory(
  services: BaseServices & AccessServices & Partial<Pick<FlowServices, 'transport'>>,
  dir: string,
  options: ResourceDirectoryOptions = {},
): Promise<{ stop(): Promise<void> }> {
  const { secrets, status } = fileStores(services.config.dataDir, `dir:${dir}`, services.log);
  const reconciler = createReconciler(services, secrets, status);
  const source = new DirectorySource(dir, secrets, status, services.log, { debounceMs: options.debounceMs ?? 200 });
  const controller = new ResourceController(source, reconciler, services.log, {
    resyncMs: options.resyncMs ?? DEFAULT_CONTROLLER_OPTIONS.resyncMs,
    baseBackoffMs: options.baseBackoffMs ?? DEFAULT_CONTROLLER_OPTIONS.baseBackoffMs,
    maxBackoffMs: options.maxBackoffMs ?? DEFAULT_CONTROLLER_OPTIONS.maxBackoffMs,
  });
  services.log.info('resources.directory', { dir });
  await controller.start();
  return { stop: () => controller.stop() };
}
