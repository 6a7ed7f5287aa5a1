import { describe, expect, it } from 'vitest';
import { newId } from '../../src/core/base/ids.js';

// newId (src/core/base/ids.ts): prefix, 10 time chars, 16 random chars; unique, sorted by creation,
// counting up within a millisecond; random bytes come from a pool refilled every 4 KiB.

describe('newId', () => {
  it('is unique and sorts in creation order, within and across milliseconds and pool refills', () => {
    const ids: string[] = [];
    for (let ms = 0; ms < 2000; ms++) for (let k = 0; k < 5; k++) ids.push(newId('msg', 1_700_000_000_000 + ms));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(ids[0]).toMatch(/^msg_[0-9a-hjkmnp-tv-z]{26}$/);
  });

  it('draws a fresh random part for each new millisecond (no two milliseconds share one)', () => {
    const randomParts = Array.from({ length: 3000 }, (_, ms) => newId('tok', 1_800_000_000_000 + ms).slice(14));
    expect(new Set(randomParts).size).toBe(randomParts.length);
  });
});
