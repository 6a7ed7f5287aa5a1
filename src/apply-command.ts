import path from 'node:path';
import type { Config } from './config/config.js';
import type { Logger } from './core/base/logger.js';
import type { Services } from './core/services.js';
import { createPinoLogger } from './logging/pino-logger.js';
import { startRuntime } from './runtime/runtime.js';
import { formatManifestError, loadManifests } from './core/flows/resources/manifest-loader.js';
import { writeSecretManifest } from './core/flows/resources/file-secret-store.js';
import { createReconciler, fileStores } from './core/flows/resources/resource-runtime.js';
import type { ReconcileResult } from './core/flows/resources/ports.js';

export interface ApplyOptions {
  /** Defaults to warnings as JSON lines on stderr, so stdout carries only the summary. */
  log?: Logger;
  /** PGlite in memory (tests). */
  inMemoryDatabase?: boolean;
}

/** Raised when any manifest is invalid or any resource is not Ready; the message is the summary. */
export class ApplyFailedError extends Error {
  constructor(readonly summary: string) {
    super(summary);
    this.name = 'ApplyFailedError';
  }
}

/**
 * `mailbox apply -f <file|dir>`: applies manifests once against the configured database (with
 * migrations, as `serve` would) and returns a summary, one line per resource. Throws
 * ApplyFailedError (exit status 1) when anything failed, after applying the rest.
 */
export async function applyManifestsOnce(
  config: Readonly<Config>,
  target: string,
  options: ApplyOptions = {},
): Promise<string> {
  const log = options.log ?? createPinoLogger('warn', { fd: 2 });
  // Not the resource directory: this command applies `target` only, then exits.
  const runtime = await startRuntime(
    { ...config, MAILBOX_RESOURCES_DIR: undefined },
    { roles: [], log, inMemoryDatabase: options.inMemoryDatabase ?? false, command: 'apply' },
  );
  try {
    return await applyManifests(runtime.services, target);
  } finally {
    await runtime.close();
  }
}

/**
 * The manifests at `target` applied once through the services given: those of `apply`'s own
 * runtime, or of the `serve` process holding the embedded database (the admin hand-off). Secrets
 * first, then Domains, then Mailboxes. Nothing is deleted: pruning belongs to the directory source.
 */
export async function applyManifests(services: Services, target: string): Promise<string> {
  const { config, log } = services;
  const set = await loadManifests(target);
  const { secrets, status } = fileStores(config.dataDir, `apply:${path.resolve(target)}`, log);
  const reconciler = createReconciler(services, secrets, status);
  const lines: string[] = [];
  const counts = { created: 0, updated: 0, unchanged: 0, failed: 0 };
  for (const secret of set.secrets) {
    const id = `Secret ${secret.metadata.namespace}/${secret.metadata.name}`;
    try {
      const outcome = await writeSecretManifest(secrets, secret);
      counts[outcome]++;
      lines.push(`${id}: ${outcome}`);
    } catch (err) {
      counts.failed++;
      lines.push(`${id}: failed (${(err as Error).message})`);
    }
  }
  const results: ReconcileResult[] = [];
  for (const domain of set.domains) results.push(await reconciler.reconcileDomain(domain));
  for (const mailbox of set.mailboxes) results.push(await reconciler.reconcileMailbox(mailbox));
  for (const r of results) {
    const id = `${r.ref.kind} ${r.ref.namespace}/${r.ref.name}`;
    if (r.ready) {
      counts[r.outcome === 'created' || r.outcome === 'updated' ? r.outcome : 'unchanged']++;
      lines.push(`${id}: ${r.outcome}`);
    } else {
      counts.failed++;
      lines.push(`${id}: ${r.outcome === 'failed' ? 'failed' : `${r.outcome}, not ready`} (${r.reason}: ${r.message})`);
    }
  }
  for (const e of set.errors) lines.push(`invalid manifest ${formatManifestError(e)}`);
  const total = set.secrets.length + results.length;
  lines.push(
    `${total} resources: ${counts.created} created, ${counts.updated} updated, ${counts.unchanged} unchanged, ${counts.failed} failed` +
      (set.errors.length ? `; ${set.errors.length} invalid manifests` : ''),
  );
  const summary = lines.join('\n');
  if (counts.failed > 0 || set.errors.length > 0) throw new ApplyFailedError(summary);
  return summary;
}
