import { describe, expect, it } from 'vitest';
import { IntakeFlow } from '../../src/core/flows/intake/intake-flow.js';

// IntakeFlow's own rules (the queue's real depth on both ports: test/smtp/intake-flow.test.ts):
// one reading per interval shared by every session, and flow control never refuses mail, not even
// when the depth cannot be read.

const options = { highWater: 10, delayMs: 200, sampleMs: 20 };

describe('IntakeFlow', () => {
  it('reads the depth once per interval, however many sessions ask at once', async () => {
    let reads = 0;
    const flow = new IntakeFlow(async () => {
      reads++;
      return 3;
    }, options);
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => flow.admit()));
    expect(outcomes.every((o) => o === 'open')).toBe(true);
    expect(reads).toBe(1);
  });

  it('keeps the last depth when a reading fails: an unreadable queue neither refuses nor frees the sender', async () => {
    let depth: number | Error = 12;
    const flow = new IntakeFlow(async () => {
      if (depth instanceof Error) throw depth;
      return depth;
    }, options);
    expect(await flow.admit()).toBe('delayed'); // over the mark, and it stays there
    depth = new Error('connection refused');
    expect(await flow.admit()).toBe('delayed'); // the last depth (12) stands, and admit still resolves

    const fresh = new IntakeFlow(async () => {
      throw new Error('connection refused');
    }, options);
    expect(await fresh.admit()).toBe('open'); // never read: nothing known holds anyone
  });

  it('lets a held sender go as soon as a reading is below the mark', async () => {
    let depth = 15;
    const flow = new IntakeFlow(async () => depth, { ...options, delayMs: 5_000 });
    const held = flow.admit();
    setTimeout(() => (depth = 4), 50);
    expect(await held).toBe('drained');
  });

  it('never reads nor waits with a delay of 0 (flow control off)', async () => {
    let reads = 0;
    const flow = new IntakeFlow(
      async () => {
        reads++;
        return 1_000_000;
      },
      { ...options, delayMs: 0 },
    );
    expect(await flow.admit()).toBe('open');
    expect(reads).toBe(0);
  });
});
