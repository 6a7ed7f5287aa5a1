import { defineConfig } from 'vitest/config';

// The whole suite runs twice: against real PostgreSQL and against embedded PGlite.
// MAILBOX_TEST_ENGINE=postgres|pglite narrows `make test` to one engine while iterating.
const engines = (process.env.MAILBOX_TEST_ENGINE ?? 'postgres,pglite').split(',');

export default defineConfig({
  test: {
    projects: [
      // Pure rules (no storage): run once.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      ...engines.map((engine) => ({
      extends: true,
      test: {
        name: engine,
        include: ['test/**/*.test.ts'],
        exclude: ['test/unit/**'],
        env: { MAILBOX_TEST_ENGINE: engine },
        testTimeout: 30_000,
        hookTimeout: 60_000,
      },
    })),
    ],
    pool: 'forks',
    maxWorkers: 2,
  },
});
