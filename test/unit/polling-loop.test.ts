import { describe, expect, it } from 'vitest';
import { PollingLoop } from '../../src/core/base/loops/polling-loop.js';

const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

describe('PollingLoop (the outbox, webhook and inbound-queue workers)', () => {
  it('runs again at once while there is work, and sleeps when there is none', async () => {
    let work = 3;
    let steps = 0;
    const loop = new PollingLoop(async () => (steps++, work-- > 0), { intervalMs: 60_000, onError: () => undefined });
    loop.start();
    await tick();
    expect(steps).toBe(4); // three with work, one that found none; then asleep for a minute
    await loop.stop();
  });

  it('a kick wakes a sleeping loop, and a kick during a step is not lost', async () => {
    let steps = 0;
    let release: (() => void) | undefined;
    const loop = new PollingLoop(
      async () => {
        steps++;
        if (steps === 2) await new Promise<void>((r) => (release = r)); // the second step is slow
        return false;
      },
      { intervalMs: 60_000, onError: () => undefined },
    );
    loop.start();
    await tick();
    expect(steps).toBe(1);
    loop.kick(); // wakes the sleeper: step 2 starts and hangs
    await tick();
    expect(steps).toBe(2);
    loop.kick(); // arrives while step 2 runs
    release!();
    await tick();
    expect(steps).toBe(3); // looked again instead of sleeping a minute
    await loop.stop();
  });

  it('wakeOn subscribes the kick while the loop runs, and unsubscribes on stop', async () => {
    const listeners = new Set<() => void>();
    const announce = () => listeners.forEach((l) => l());
    let steps = 0;
    const loop = new PollingLoop(async () => (steps++, false), {
      intervalMs: 60_000,
      onError: () => undefined,
      wakeOn: (kick) => (listeners.add(kick), () => listeners.delete(kick)),
    });
    loop.start();
    await tick();
    expect(steps).toBe(1);
    announce();
    await tick();
    expect(steps).toBe(2);
    await loop.stop();
    expect(listeners.size).toBe(0);
  });

  it('stop waits for the step in flight; an error is reported and the loop goes on', async () => {
    const errors: unknown[] = [];
    let finished = false;
    let calls = 0;
    const loop = new PollingLoop(
      async () => {
        calls++;
        if (calls === 1) throw new Error('claim failed');
        await tick(50);
        finished = true;
        return false;
      },
      { intervalMs: 10, onError: (err) => errors.push(err) },
    );
    loop.start();
    await tick(30);
    await loop.stop();
    expect(errors).toHaveLength(1);
    expect(finished).toBe(true);
  });
});
