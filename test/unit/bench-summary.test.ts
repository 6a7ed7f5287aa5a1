import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

// `make bench` ends with bench/summary.ts, which keeps a dated copy of the run's raw JSON
// (bench/results/<yyyy-mm-dd>/, committed) beside bench/results/latest/ (not committed).
const ROOT = path.resolve(import.meta.dirname, '../..');
const SUMMARY = path.join(ROOT, 'bench/summary.ts');
const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('bench/summary.ts', () => {
  it('prints the ratios of bench/results/latest and keeps the run as bench/results/<date>/', () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'bench-summary-'));
    dirs.push(cwd);
    const latest = path.join(cwd, 'bench/results/latest');
    mkdirSync(latest, { recursive: true });
    const result = {
      bench: 'smtp',
      at: '2026-11-29T05:17:00.000Z',
      rows: [
        { work: 'w', ours: 817, baseline: 605, baselineName: 'Postfix', unit: 'msg/s', goal: 1, higherIsBetter: true },
      ],
    };
    writeFileSync(path.join(latest, 'smtp.json'), JSON.stringify(result));
    const out = execFileSync(process.execPath, ['--import', TSX, SUMMARY], { cwd, encoding: 'utf8' });
    expect(out).toContain('1.35×');
    const today = new Date().toISOString().slice(0, 10);
    const kept = JSON.parse(readFileSync(path.join(cwd, 'bench/results', today, 'smtp.json'), 'utf8'));
    expect(kept).toEqual(result);
  });
});
