import { afterEach, describe, expect, it, vi } from 'vitest';
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

  describe('several loops (concurrency)', () => {
    afterEach(() => {
      vi.useRealTimers();
    });
    // Lets every pending promise callback run without moving the (fake) clock.
    const settle = () => vi.advanceTimersByTimeAsync(0);

    /** `concurrency` loops that never find work, polling each second; `steps()` counts their looks. */
    const idleLoops = (concurrency: number) => {
      vi.useFakeTimers();
      let steps = 0;
      const loop = new PollingLoop(async () => (steps++, false), {
        intervalMs: 1000,
        concurrency,
        onError: () => undefined,
      });
      loop.start();
      return { loop, steps: () => steps };
    };

    it('while idle, one loop looks an interval, not each of them', async () => {
      const { loop, steps } = idleLoops(4);
      await settle();
      expect(steps()).toBe(4); // each loop looks once at start
      await vi.advanceTimersByTimeAsync(1000);
      expect(steps()).toBe(5);
      await vi.advanceTimersByTimeAsync(5000);
      expect(steps()).toBe(10);
      await loop.stop();
    });

    it('the look that finds work wakes the waiting loops, which claim beside it', async () => {
      vi.useFakeTimers();
      let work = 0;
      let inFlight = 0;
      let mostInFlight = 0;
      const loop = new PollingLoop(
        async () => {
          if (work === 0) return false;
          work--;
          inFlight++;
          mostInFlight = Math.max(mostInFlight, inFlight);
          await new Promise((r) => setTimeout(r, 100)); // a delivery takes a while
          inFlight--;
          return true;
        },
        { intervalMs: 1000, concurrency: 4, onError: () => undefined },
      );
      loop.start();
      await settle();
      work = 8; // queued by another process: found by the next look
      await vi.advanceTimersByTimeAsync(1000);
      await vi.advanceTimersByTimeAsync(500);
      expect(work).toBe(0);
      expect(mostInFlight).toBe(4);
      await loop.stop();
    });

    it('a kick wakes every loop, and one of them keeps watching afterwards', async () => {
      const { loop, steps } = idleLoops(3);
      await settle();
      expect(steps()).toBe(3);
      loop.kick();
      await settle();
      expect(steps()).toBe(6);
      await vi.advanceTimersByTimeAsync(1000);
      expect(steps()).toBe(7);
      await loop.stop();
    });
  });
});
