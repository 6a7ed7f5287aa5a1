import path from 'node:path';
import type { Config } from '../config/config.js';
import { request } from '../runtime/admin-socket-protocol.js';

/**
 * `mailbox migrate`: applies pending migrations and prints what it applied. On an embedded data
 * directory a running `serve` holds, the server answers instead (admin-handoff.ts): it migrated
 * the database when it started.
 */
export async function runMigrate(config: Readonly<Config>): Promise<string> {
  const { openOrm, migrate } = await import('../storage/orm.js');
  let orm;
  try {
    orm = await openOrm({
      databaseUrl: config.DATABASE_URL,
      pgliteDir: config.DATABASE_URL ? undefined : path.join(config.dataDir, 'pglite'),
      lockAs: { command: 'migrate', resourcesDir: null },
    });
  } catch (err) {
    const { handOffOrThrow } = await import('../runtime/admin-socket-client.js');
    return String(await handOffOrThrow(config.dataDir, request('migrate', [], {}), err));
  }
  try {
    return migrateSummary(await migrate(orm));
  } finally {
    await orm.close();
  }
}

/** The line `migrate` prints; `by` names the running server that did the work. */
export function migrateSummary(applied: readonly string[], by?: string): string {
  if (!by) return applied.length ? `applied: ${applied.join(', ')}` : 'no pending migrations';
  return applied.length
    ? `applied: ${applied.join(', ')} (by ${by})`
    : `no pending migrations: ${by} applied them when it started`;
}
