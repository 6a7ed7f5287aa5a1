import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { cpus, loadavg } from 'node:os';
import { table } from './lib/measure.js';
import { ratioOf, type RatioRow } from './lib/ratios.js';

// The one table of `make bench`: every headline ratio, each measured beside its baseline in the
// same run by its own bench (bench/results/latest/<bench>.json, written by writeRatios), so a
// reader sees at a glance which goals are met on this machine. The run's JSON is also kept as
// bench/results/<yyyy-mm-dd>/<bench>.json, which is committed (latest/ is not; docs/performance.md).
const dir = path.resolve('bench/results/latest');
const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')) : [];
// A smoke run (make bench-smoke) checks that the benches run; its figures are not kept.
if (files.length && process.env.BENCH_SMOKE !== '1') {
  const dated = path.resolve('bench/results', new Date().toISOString().slice(0, 10));
  mkdirSync(dated, { recursive: true });
  for (const file of files) copyFileSync(path.join(dir, file), path.join(dated, file));
}

const rows = files
  .sort()
  .flatMap((file) => {
    const result = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as {
      bench: string;
      at: string;
      rows: RatioRow[];
    };
    return result.rows.map((row) => ({ ...row, bench: result.bench, at: result.at }));
  })
  .map((row) => {
    const ratio = ratioOf(row);
    const verdict = row.goal === null ? 'info' : ratio >= row.goal ? 'MET' : 'not met';
    return {
      bench: row.bench,
      work: row.work,
      ours: `${row.ours} ${row.unit}`,
      baseline: `${row.baseline} ${row.unit} (${row.baselineName})`,
      ratio: Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : 'n/a',
      goal: row.goal === null ? '' : `≥ ${row.goal}×`,
      verdict,
      measured: row.at.slice(0, 16).replace('T', ' '),
    };
  });

console.log(
  `\n## make bench: every ratio beside its baseline (${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)} now)\n`,
);
console.log(rows.length ? table(rows) : 'no bench results in bench/results/latest (run the benches first)');
