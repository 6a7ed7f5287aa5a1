import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { FAILURES_FILE } from '../../support/failure-list-reporter.js';
import { FIGURES_FILE, type Figure } from './figures.js';
import { FULL } from './scale.js';

/**
 * Clears the figures of an earlier run, and prints this run's as one pass/fail table at the end. A
 * failed figure fails the run even where its test asserted something else (it is added to
 * test-results/failures.txt, which `make test` prints last).
 */
export default function setup(): () => void {
  rmSync(FIGURES_FILE, { force: true });
  return () => {
    if (!existsSync(FIGURES_FILE)) return;
    const figures = readFileSync(FIGURES_FILE, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Figure);
    const failed = figures.filter((f) => !f.pass).length;
    const rows = figures.map(
      (f) => `| ${f.pass ? 'PASS' : 'FAIL'} | ${f.suite} | ${f.name} | ${f.value} | ${f.target} |`,
    );
    console.log(
      [
        '',
        `Reliability figures (${FULL ? 'full: make reliability' : 'short: inside make test'}): ${figures.length - failed} pass, ${failed} fail`,
        '| result | suite | figure | value | target |',
        '|---|---|---|---|---|',
        ...rows,
        `(also in ${FIGURES_FILE})`,
      ].join('\n'),
    );
    if (failed === 0) return;
    process.exitCode = 1;
    const lines = figures
      .filter((f) => !f.pass)
      .map((f) => `  figure ${f.suite}: ${f.name} = ${f.value} (target ${f.target})`);
    mkdirSync(path.dirname(FAILURES_FILE), { recursive: true });
    appendFileSync(FAILURES_FILE, `Failed reliability figures (${failed}):\n${lines.join('\n')}\n`);
  };
}
