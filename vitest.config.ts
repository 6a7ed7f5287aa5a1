import { defineConfig } from 'vitest/config';

// The whole suite runs twice: against real PostgreSQL and against embedded PGlite.
// MAILBOX_TEST_ENGINE=postgres|pglite narrows `make test` to one engine while iterating.
const engines = (process.env.MAILBOX_TEST_ENGINE ?? 'postgres,pglite').split(',');

export default defineConfig({
  test: {
    projects: [
      // Pure rules (no storage): run once.
      { extends: true as const, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      // Kubernetes: one API server (real kube-apiserver, else a stand-in; see test/k8s/support/cluster.ts)
      // shared by every file, on PostgreSQL (so not with MAILBOX_TEST_ENGINE=pglite); about a minute.
      // `make test-k8s` runs only this project.
      ...(engines.includes('postgres')
        ? [
            {
              extends: true as const,
              test: {
                name: 'k8s',
                include: ['test/k8s/**/*.test.ts'],
                globalSetup: ['test/k8s/support/global-setup.ts'],
                env: { MAILBOX_TEST_ENGINE: 'postgres' },
                testTimeout: 90_000,
                hookTimeout: 120_000,
              },
            },
          ]
        : []),
      // Reliability and security proof: real processes killed and restarted, a private
      // PostgreSQL stopped, a private Redis flushed. PostgreSQL only (PGlite lives inside one
      // process). Short sizes here; `make reliability` runs the same files with RELIABILITY=full.
      ...(engines.includes('postgres')
        ? [
            {
              extends: true as const,
              test: {
                name: 'reliability',
                include: ['test/reliability/**/*.test.ts'],
                globalSetup: ['test/reliability/support/global-setup.ts'],
                env: { MAILBOX_TEST_ENGINE: 'postgres' },
                testTimeout: process.env.RELIABILITY === 'full' ? 3_600_000 : 300_000,
                hookTimeout: 300_000,
              },
            },
          ]
        : []),
      // The web console in Debian's Chromium (playwright-core) against a real `mailbox serve` process
      // on the embedded default, as `make run` starts it. Skipped, with one line, without Chromium.
      {
        extends: true as const,
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          globalSetup: ['test/browser/support/global-setup.ts'],
          // One server and one Chromium at a time: together they outgrow a small machine's start-up budget.
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 360_000,
        },
      },
      ...engines.map((engine) => ({
        extends: true as const,
        test: {
          name: engine,
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**', 'test/k8s/**', 'test/reliability/**', 'test/browser/**'],
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
