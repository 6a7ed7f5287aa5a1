import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { SpreadSequencer } from './test/support/spread-sequencer.js';

// Where a test file runs, by one rule:
// - a file that imports test/support/harness.ts (directly or through another file under test/) opens
//   storage on MAILBOX_TEST_ENGINE, so it runs on both engines (the `postgres` and `pglite` projects);
// - every other file does not touch storage and runs once (`unit` for test/unit/, `once` elsewhere).
// ONE_ENGINE lists the exceptions: files that take a database from the harness only to have a process
// to drive; what they test (commands, exit codes, the modules a role loads) is the same on either
// engine, and both engines' storage is covered by the files that test it. They run once, on the first
// engine. test/unit/test-projects.test.ts holds the unit folder to the rule.
// MAILBOX_TEST_ENGINE=postgres|pglite narrows a run to one engine while iterating.
const engines = (process.env.MAILBOX_TEST_ENGINE ?? 'postgres,pglite').split(',');

const ONE_ENGINE = [
  'test/cli/cli.test.ts',
  'test/cli/role-modules.test.ts',
  // Real MTAs against our SMTP ports: what crosses the wire is the same whatever stores it.
  'test/interop/postfix.test.ts',
  'test/interop/exim.test.ts',
];
// Files that need a process no other file ran in: instrumentation patches pg, koa and ioredis as
// they are first imported; the metrics test reads the process-wide Prometheus registry's counts.
export const FRESH_PROCESS = ['test/telemetry/send-trace.test.ts', 'test/telemetry/metrics.test.ts'];
// A guard against a hang, not a judgement of speed: the slowest tests of these projects take 15-20 s
// on one machine and parts of the suite run several times slower on another of the same kind.
const TEST_TIMEOUT_MS = 120_000;
const HOOK_TIMEOUT_MS = 180_000;
const OWN_PROJECTS = ['test/unit/', 'test/k8s/', 'test/reliability/', 'test/browser/'];

const ROOT = import.meta.dirname;
const storageFree = filesWithoutHarness();
const onceFiles = [
  ...new Set([...storageFree.filter((f) => !OWN_PROJECTS.some((dir) => f.startsWith(dir))), ...ONE_ENGINE]),
].sort();

export default defineConfig({
  test: {
    projects: [
      // Pure rules (no storage): run once. `make test-unit` runs only this project.
      { extends: true as const, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      // Outside test/unit/: the files that do not touch storage, and ONE_ENGINE.
      {
        extends: true as const,
        test: {
          name: 'once',
          include: onceFiles,
          env: { MAILBOX_TEST_ENGINE: engines[0]! },
          testTimeout: TEST_TIMEOUT_MS,
          hookTimeout: HOOK_TIMEOUT_MS,
        },
      },
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
      // Reliability and security proof: real processes killed and restarted, a private PostgreSQL
      // stopped, a private Redis flushed. PostgreSQL only (PGlite lives inside one process). Short
      // sizes here; `make reliability` runs the same files with RELIABILITY=full.
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
          // One server and one Chromium at a time in practice: SpreadSequencer places these files far
          // apart in the queue (a project of one file at a time would run after all the others).
          testTimeout: 60_000,
          hookTimeout: 360_000,
        },
      },
      // Per engine, the files that open storage share their worker's module cache (and PGlite's
      // compiled WASM): importing the service and compiling PGlite were a third of these projects'
      // time. Each file still starts its own servers on its own database. FRESH_PROCESS files get a
      // process of their own; test/unit/test-isolation.test.ts holds the rest to what sharing needs.
      ...engines.flatMap((engine) => [
        {
          extends: true as const,
          test: {
            name: engine,
            include: ['test/**/*.test.ts'],
            exclude: [...OWN_PROJECTS.map((dir) => `${dir}**`), ...onceFiles, ...FRESH_PROCESS],
            env: { MAILBOX_TEST_ENGINE: engine },
            isolate: false,
            testTimeout: TEST_TIMEOUT_MS,
            hookTimeout: HOOK_TIMEOUT_MS,
          },
        },
        {
          extends: true as const,
          test: {
            name: `${engine}-fresh`,
            include: FRESH_PROCESS,
            env: { MAILBOX_TEST_ENGINE: engine },
            testTimeout: TEST_TIMEOUT_MS,
            hookTimeout: HOOK_TIMEOUT_MS,
          },
        },
      ]),
    ],
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', './test/support/failure-list-reporter.ts', './test/support/timeline-reporter.ts'],
    sequence: { sequencer: SpreadSequencer },
  },
});

/** The test files (paths from the repository root) that reach test/support/harness.ts through no import. */
export function filesWithoutHarness(root = ROOT): string[] {
  const harness = 'test/support/harness.ts';
  const files = listTs(root, 'test');
  const imports = new Map(files.map((f) => [f, relativeImports(root, f)]));
  const reaches = new Map<string, boolean>();
  const visit = (file: string, seen: Set<string>): boolean => {
    if (file === harness) return true;
    const known = reaches.get(file);
    if (known !== undefined) return known;
    if (seen.has(file)) return false;
    seen.add(file);
    const result = (imports.get(file) ?? []).some((dep) => visit(dep, seen));
    reaches.set(file, result);
    return result;
  };
  return files.filter((f) => f.endsWith('.test.ts') && !visit(f, new Set()));
}

function listTs(root: string, dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : listTs(root, rel);
    return entry.name.endsWith('.ts') ? [rel] : [];
  });
}

/** Relative imports (static, side-effect, dynamic, vi.mock) of a test/ file that land in test/, as repository paths. */
function relativeImports(root: string, file: string): string[] {
  const source = readFileSync(path.join(root, file), 'utf8');
  const specifiers = [...source.matchAll(/(?:from|import|import\(|vi\.mock\()\s*'(\.{1,2}\/[^']+)'/g)].map(
    (m) => m[1]!,
  );
  return specifiers
    .map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)).replace(/\.js$/, '.ts'))
    .filter((f) => f.startsWith('test/'));
}
