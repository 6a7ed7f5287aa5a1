import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Figure } from '../../reliability/support/figures.js';
import { ROOT } from './kubectl.js';

// The figures of one `make e2e` run, printed as the same pass/fail table as `make reliability`
// (result | suite | figure | value | target) and kept in test-results/e2e-figures.json.

const figures: Figure[] = [];

export function figure(f: Figure): Figure {
  figures.push(f);
  console.log(`[figure] ${f.pass ? 'PASS' : 'FAIL'} ${f.suite}: ${f.name} = ${f.value} (target ${f.target})`);
  return f;
}

export const zero = (suite: string, name: string, value: number) =>
  figure({ suite, name, value, target: '= 0', pass: value === 0 });

/** A figure whose check threw before it could be measured. */
export const failedStep = (suite: string, name: string, err: unknown) =>
  figure({
    suite,
    name,
    value: `error: ${String((err as Error)?.message ?? err).slice(0, 160)}`,
    target: 'no error',
    pass: false,
  });

export function allPassed(): boolean {
  return figures.length > 0 && figures.every((f) => f.pass);
}

export function printTable(title: string): string {
  const failed = figures.filter((f) => !f.pass).length;
  const table = [
    '',
    `${title}: ${figures.length - failed} pass, ${failed} fail`,
    '| result | suite | figure | value | target |',
    '|---|---|---|---|---|',
    ...figures.map((f) => `| ${f.pass ? 'PASS' : 'FAIL'} | ${f.suite} | ${f.name} | ${f.value} | ${f.target} |`),
  ].join('\n');
  const file = path.join(ROOT, 'test-results/e2e-figures.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(figures, null, 2));
  console.log(`${table}\n(also in ${path.relative(ROOT, file)})`);
  return table;
}
