import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';

/**
 * Compiles the core's query builders (kysely `sql` templates) to SQL text and parameters without a
 * connection, so a bench runs exactly the statement the service runs (on its own pg client).
 */
export const offlineCompiler = new Kysely<any>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});
