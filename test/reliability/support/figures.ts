import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

/** One measured figure of the reliability suite, with the target it is judged against. */
export interface Figure {
  /** The area, e.g. "durability", "authorization". */
  suite: string;
  /** What was measured, e.g. "acknowledged but lost". */
  name: string;
  value: number | string;
  /** The target as a reader would write it, e.g. "= 0", "≤ 1000 ms". */
  target: string;
  pass: boolean;
}

export const FIGURES_FILE = path.resolve(import.meta.dirname, '../../../test-results/reliability-figures.jsonl');

/**
 * Records a figure for the end-of-run table (global-setup.ts prints it; `make reliability`
 * shows it) and prints it at once. Tests still assert: a figure is evidence, not the check.
 */
export function recordFigure(figure: Figure): Figure {
  mkdirSync(path.dirname(FIGURES_FILE), { recursive: true });
  appendFileSync(FIGURES_FILE, `${JSON.stringify({ ...figure, at: new Date().toISOString() })}\n`);
  console.log(
    `[figure] ${figure.pass ? 'PASS' : 'FAIL'} ${figure.suite}: ${figure.name} = ${figure.value} (target ${figure.target})`,
  );
  return figure;
}

/** Shorthand for the common "must be exactly zero" figure. */
export const zeroFigure = (suite: string, name: string, value: number): Figure =>
  recordFigure({ suite, name, value, target: '= 0', pass: value === 0 });
