import { describe, expect, it } from 'vitest';
import { startBatchedPass } from '../../src/core/base/loops/batched-pass.js';

/** Resolves once `cond` holds (polled; the timers here are real, the machine may be busy). */
async function until(cond: () => boolean): Promise<void> {
  for (let waited = 0; !cond(); waited += 5) {
    if (waited > 10_000) throw new Error('condition not reached in 10 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('startBatchedPass', () => {
  it('runs the step again while it returns a full batch, reports the total, never two passes at once', async () => {
    const returns = [3, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let concurrent = 0;
    let maxConcurrent = 0;
    const totals: number[] = [];
    const pass = startBatchedPass(
      async () => {
        maxConcurrent = Math.max(maxConcurrent, ++concurrent);
        await new Promise((r) => setTimeout(r, 15)); // longer than the interval
        concurrent--;
        return returns.shift() ?? 0;
      },
      { batch: 3, intervalMs: 5, onDone: (n) => totals.push(n), onError: () => undefined },
    );
    await until(() => totals.length > 0 && returns.length < 8); // the first pass and a few empty ones
    await pass.stop();
    expect(totals[0]).toBe(7); // 3 + 3 + 1 in one pass, then later passes found nothing
    expect(totals).toHaveLength(1);
    expect(maxConcurrent).toBe(1);
  });

  it('reports a failing step and goes on at the next interval; stop waits for the running pass', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    let finished = false;
    const pass = startBatchedPass(
      async () => {
        calls++;
        if (calls === 1) throw new Error('storage down');
        await new Promise((r) => setTimeout(r, 30));
        finished = true;
        return 0;
      },
      { batch: 10, intervalMs: 5, onDone: () => undefined, onError: (err) => errors.push(err) },
    );
    await until(() => calls >= 2);
    await pass.stop();
    expect((errors[0] as Error).message).toBe('storage down');
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(finished).toBe(true);
  });
});
