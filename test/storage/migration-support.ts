import { openOrm, type Em, type Orm } from '../../src/storage/orm.js';
import { createScratchDatabase, ENGINE } from '../support/harness.js';

/**
 * A database migrated up to `name` (included), for a backfill test that writes rows the way the
 * schema then was before running the remaining migrations: a scratch PostgreSQL database, or an
 * in-memory PGlite under MAILBOX_TEST_ENGINE=pglite.
 */
export async function databaseMigratedTo(name: string) {
  let orm: Orm;
  let drop: () => Promise<void> = async () => undefined;
  if (ENGINE === 'pglite') orm = await openOrm({});
  else {
    const scratch = await createScratchDatabase({ empty: true });
    drop = scratch.drop;
    orm = await openOrm({ databaseUrl: scratch.url, poolMax: 2 });
  }
  await orm.migrator.up({ to: name });
  return {
    /** A Kysely handle on the database. */
    q: () => (orm.em.fork() as Em).getKysely(),
    /** Runs every later migration. */
    migrateRest: () => orm.migrator.up(),
    close: async () => {
      await orm.close(true);
      await drop();
    },
  };
}
