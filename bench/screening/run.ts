import { performance } from 'node:perf_hooks';
import { table } from '../lib/measure.js';
import { loadCorpus, SCREENING_DIR, screenCorpus, screenCorpusMail, scoreScreening } from './corpus.js';
import { DEFAULT_HOLD_THRESHOLD } from '../../src/core/state/screening/weights.js';

// bench/screening: precision and recall of inbound screening at the default threshold on
// test/fixtures/screening, and the time one message costs, printed by `make bench` (no
// database). test/unit/screening-corpus.test.ts holds the same scores to its floors.
// SCREENING_BENCH_ROUNDS sets how often the corpus is screened for the timing (default 200).
const ROOT = process.cwd(); // make runs it from the repository root
const ROUNDS = Number(process.env.SCREENING_BENCH_ROUNDS ?? 200);

function main(): void {
  const dir = SCREENING_DIR(ROOT);
  const score = scoreScreening(screenCorpus(dir));
  const { context, hostile, ordinary } = loadCorpus(dir);
  const mails = [...hostile, ...ordinary];
  for (const m of mails) screenCorpusMail(m, context); // warm up the JIT
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round++)
    for (const m of mails) {
      const started = performance.now();
      screenCorpusMail(m, context);
      samples.push(performance.now() - started);
    }
  samples.sort((a, b) => a - b);
  const mean = samples.reduce((s, x) => s + x, 0) / samples.length;
  const p99 = samples[Math.floor(samples.length * 0.99)] ?? 0;
  console.log(
    `\nbench/screening — ${score.hostile} hostile, ${score.ordinary} ordinary mails, threshold ${DEFAULT_HOLD_THRESHOLD}\n`,
  );
  console.log(
    table([
      {
        figure: 'precision',
        value: score.precision.toFixed(3),
        detail: `tp ${score.tp}, fp ${score.fp}`,
        target: '≥ 0.95',
      },
      { figure: 'recall', value: score.recall.toFixed(3), detail: `tp ${score.tp}, fn ${score.fn}`, target: '≥ 0.88' },
      {
        figure: 'time per message',
        value: `${(mean * 1000).toFixed(0)} µs`,
        detail: `p99 ${(p99 * 1000).toFixed(0)} µs over ${samples.length} screenings`,
        target: '< 1 ms',
      },
    ]),
  );
  for (const m of score.misses) console.log(`  ${m}`);
  const met = score.precision >= 0.95 && score.recall >= 0.88 && mean < 1;
  console.log(`target: ${met ? 'MET' : 'NOT MET'}`);
}

main();
