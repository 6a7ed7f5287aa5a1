import { isStorageUnavailable } from './errors.js';
import { MikroORM, type Options } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { PgliteDriver } from '@mikro-orm/pglite';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { Migrator } from '@mikro-orm/migrations';
import type { SqlEntityManager } from '@mikro-orm/sql';
import { mkdirSync } from 'node:fs';
import { allEntities } from './entities/index.js';
import { messageSearchVector } from './entities/routines.js';
import { migrations } from './migrations/index.js';
import { lockDataDir } from './data-dir-lock.js';
import { serviceClient, StatementNames } from './prepared-statements.js';

export type Orm = MikroORM;
export type Em = SqlEntityManager;

export interface DatabaseTarget {
  /** postgres://… when set; otherwise the embedded PGlite cluster under `pgliteDir`. */
  databaseUrl?: string | undefined;
  pgliteDir?: string | undefined;
  /** An in-memory PGlite starts from this dump of a cluster (`dumpDataDir`) instead of an empty one. */
  pgliteDump?: Blob | undefined;
  poolMax?: number;
  /** Run parameterised statements as named prepared statements (PostgreSQL only; default true). */
  preparedStatements?: boolean;
  debug?: boolean;
  /** Who opens a PGlite directory (`serve`, `apply`, `migrate`): one process at a time, see data-dir-lock.ts. */
  lockAs?: { command: string; resourcesDir: string | null };
}

/**
 * One schema and one set of migrations for both engines: PostgreSQL for deployments,
 * PGlite (PostgreSQL compiled to WASM, in process) for the embedded default and its tests.
 */
export function ormOptions(target: DatabaseTarget): Partial<Options> {
  const common: Partial<Options> = {
    entities: allEntities,
    routines: [messageSearchVector],
    extensions: [Migrator],
    migrations: {
      migrationsList: migrations,
      tableName: 'mikro_orm_migrations',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
    debug: target.debug ?? false,
    // Entities are plain data here; the identity map per fork is all the caching we want.
    allowGlobalContext: false,
    ensureDatabase: false,
    discovery: { warnWhenNoEntities: true },
  };
  if (target.databaseUrl) {
    return {
      ...common,
      driver: PostgreSqlDriver,
      clientUrl: target.databaseUrl,
      pool: { min: 0, max: target.poolMax ?? 10 },
      // Merged into pg's Pool options: every connection runs queries in pg's callback form and,
      // unless turned off, prepares its repeated statements (prepared-statements.ts).
      driverOptions: { Client: serviceClient(target.preparedStatements === false ? undefined : new StatementNames()) },
    } as Partial<Options>;
  }
  if (target.pgliteDir) mkdirSync(target.pgliteDir, { recursive: true });
  return {
    ...common,
    driver: PgliteDriver,
    // An absent dir means an in-memory cluster (tests); a path makes it persistent.
    dbName: target.pgliteDir ?? 'memory://',
    // The search index's mailbox key (migration 20270126000000); PostgreSQL ships it in contrib.
    // A factory, because MikroORM copies option objects and a copied Blob (the dump) is unreadable.
    driverOptions: () => ({
      extensions: { btree_gin },
      ...(target.pgliteDump && !target.pgliteDir ? { loadDataDir: target.pgliteDump } : {}),
    }),
  } as Partial<Options>;
}

export async function openOrm(target: DatabaseTarget): Promise<Orm> {
  if (target.databaseUrl || !target.pgliteDir) return MikroORM.init(ormOptions(target));
  mkdirSync(target.pgliteDir, { recursive: true });
  const release = lockDataDir(target.pgliteDir, target.lockAs ?? { command: 'serve', resourcesDir: null });
  try {
    const orm = await MikroORM.init(ormOptions(target));
    const close = orm.close.bind(orm);
    orm.close = async (force?: boolean) => {
      try {
        await close(force);
      } finally {
        release();
      }
    };
    return orm;
  } catch (err) {
    release();
    throw err;
  }
}

/**
 * `openOrm`, retried while the database cannot be reached (a pod starting before PostgreSQL, or
 * during its restart): backoff from 500 ms to 5 s, `onWait` told of each failure, up to `waitMs`;
 * then, or on any other error, the error is thrown.
 */
export async function openOrmWhenReachable(
  target: DatabaseTarget,
  waitMs: number,
  onWait: (attempt: number, err: unknown) => void,
): Promise<Orm> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      const orm = await openOrm(target);
      if (!target.databaseUrl) return orm;
      // The ORM opens without connecting; a failed connection shows on the first query.
      try {
        await orm.em.getConnection().execute('select 1');
        return orm;
      } catch (err) {
        await orm.close(true).catch(() => undefined);
        throw err;
      }
    } catch (err) {
      const pause = Math.min(5_000, 500 * 2 ** (attempt - 1));
      if (!target.databaseUrl || !isStorageUnavailable(err) || Date.now() + pause > deadline) throw err;
      onWait(attempt, err);
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/** Applies every pending migration; returns the names applied. */
export async function migrate(orm: Orm): Promise<string[]> {
  const applied = await orm.migrator.up();
  return applied.map((m) => m.name);
}
