import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
/** One headline figure of a bench beside its baseline measured in the same run. */
export interface RatioRow {
  work: string;
  ours: number;
  baseline: number;
  baselineName: string;
  unit: string;
  goal: number | null;
  higherIsBetter: boolean;
}
/** Writes bench/results/latest/<bench>.json, read by bench/summary.ts (the one table of `make bench`). */
export function writeRatios(bench: string, rows: RatioRow[]): void {
  const dir = path.resolve('bench/results/latest');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, `${bench}.json`),
    JSON.stringify({ bench, at: new Date().toISOString(), rows }, null, 2),
  );
}

/** ours/baseline when more is better, baseline/ours otherwise: above 1 always means ahead. */
export function ratioOf(row: RatioRow): number {
  if (!row.ours || !row.baseline) return NaN;
  return row.higherIsBetter ? row.ours / row.baseline : row.baseline / row.ours;
}
