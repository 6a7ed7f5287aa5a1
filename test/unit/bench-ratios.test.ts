import { describe, expect, it } from 'vitest';
import { ratioOf, type RatioRow } from '../../bench/lib/ratios.js';

const row = (ours: number, baseline: number, higherIsBetter: boolean): RatioRow => ({
  work: 'w',
  ours,
  baseline,
  baselineName: 'b',
  unit: 'u',
  goal: 1,
  higherIsBetter,
});

describe('bench ratios (the summary table of make bench)', () => {
  it('is ours ÷ baseline for rates, so above 1 means faster than the baseline', () => {
    expect(ratioOf(row(300, 150, true))).toBe(2);
  });
  it('is baseline ÷ ours for costs (latency, memory), so above 1 still means ahead', () => {
    expect(ratioOf(row(300, 150, false))).toBe(0.5);
  });
  it('is not a number when a side was not measured', () => {
    expect(ratioOf(row(0, 150, true))).toBeNaN();
    expect(ratioOf(row(150, 0, false))).toBeNaN();
  });
});
