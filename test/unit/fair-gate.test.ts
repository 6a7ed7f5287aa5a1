import { describe, expect, it } from 'vitest';
import { FairGate } from '../../src/storage/fair-gate.js';

// The replay gate (docs/api.md, "Per-token bounds"): never more than `width` at once, and
// waiters served in arrival order, so a socket that queues again after each page takes turns.
describe('FairGate', () => {
  it('runs at most width tasks at once and serves waiters first come, first served', async () => {
    const gate = new FairGate(2);
    const order: string[] = [];
    let running = 0;
    let peak = 0;
    const releases: Array<() => void> = [];
    const task = (name: string) =>
      gate.run(async () => {
        running++;
        peak = Math.max(peak, running);
        order.push(name);
        await new Promise<void>((r) => releases.push(r));
        running--;
      });
    const all = ['a', 'b', 'c', 'd', 'e'].map(task);
    await Promise.resolve();
    expect(order).toEqual(['a', 'b']);
    expect(gate.load).toEqual({ running: 2, waiting: 3 });
    // A newcomer arriving while a slot passes on does not overtake the queue.
    releases.shift()!();
    const late = task('late');
    while (releases.length) {
      await new Promise((r) => setTimeout(r, 0));
      releases.shift()?.();
    }
    await new Promise((r) => setTimeout(r, 0));
    while (releases.length) releases.shift()!();
    await Promise.all([...all, late]);
    expect(order).toEqual(['a', 'b', 'c', 'd', 'e', 'late']);
    expect(peak).toBe(2);
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });

  it('gives the slot back when a task fails', async () => {
    const gate = new FairGate(1);
    await expect(gate.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await gate.run(async () => 42)).toBe(42);
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });
});
