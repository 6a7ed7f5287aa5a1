import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

export const FAILURES_FILE = path.join(import.meta.dirname, '../../test-results/failures.txt');

/**
 * Writes what failed in a run (tests, suites whose hooks failed, modules), one line each with the
 * first line of the error, to test-results/failures.txt. The default reporter prints them too, but
 * above everything the global teardowns print after it (the reliability table), so a CI log cut to
 * its last lines lost them; `make test` prints this file last when the run fails.
 */
export default class FailureListReporter implements Reporter {
  onInit(): void {
    rmSync(FAILURES_FILE, { force: true });
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    const lines: string[] = [];
    for (const mod of testModules) {
      const where = `[${mod.project.name}] ${path.relative(process.cwd(), mod.moduleId)}`;
      for (const error of mod.errors()) lines.push(`${where}: ${firstLine(error.message)}`);
      // A describe's failing hook fails its suite, not a test (its tests are skipped).
      for (const suite of mod.children.allSuites())
        for (const error of suite.errors()) lines.push(`${where} > ${suite.fullName}: ${firstLine(error.message)}`);
      for (const test of mod.children.allTests('failed')) {
        const error = test.result().errors?.[0];
        lines.push(`${where} > ${test.fullName}: ${firstLine(error?.message)}`);
      }
    }
    for (const error of unhandledErrors) lines.push(`unhandled: ${firstLine(error.message)}`);
    if (lines.length === 0) return;
    mkdirSync(path.dirname(FAILURES_FILE), { recursive: true });
    writeFileSync(FAILURES_FILE, `Failed (${lines.length}):\n${lines.map((l) => `  ${l}`).join('\n')}\n`);
  }
}

function firstLine(message: string | undefined): string {
  return (message ?? '(no message)').split('\n')[0]!.slice(0, 300);
}
