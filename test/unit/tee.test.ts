import { PassThrough, type Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { tee } from '../../src/core/state/mail/tee.js';

// tee (src/core/state/mail/tee.ts): every branch gets every byte at the slowest reader's pace; a branch
// whose reader gives up (the verifier after the header) never holds up the others or the sender.

const total = (r: Readable) =>
  (async () => {
    let n = 0;
    for await (const c of r) n += (c as Buffer).length;
    return n;
  })();
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, sleep(ms).then(() => Promise.reject(new Error(`stalled for ${ms} ms`)))]);

describe('tee', () => {
  it('gives every branch every byte, in order', async () => {
    const source = new PassThrough();
    const [a, b] = tee(source, 2);
    const reads = Promise.all([total(a!), total(b!)]);
    for (let i = 0; i < 50; i++) source.write(Buffer.alloc(10_000, i));
    source.end();
    expect(await reads).toEqual([500_000, 500_000]);
  });

  it('a branch given up while the source waits for it does not stall the others', async () => {
    // 600 KB already buffered in the source (what heldIfSmall hands on past its limit): every
    // branch is full at once, and the third is destroyed before it ever drains.
    const source = new PassThrough();
    for (let i = 0; i < 60; i++) source.write(Buffer.alloc(10_000, i));
    source.end();
    const [a, b, c] = tee(source, 3);
    const reads = Promise.all([total(a!), total(b!)]);
    await sleep(20);
    const it3 = c![Symbol.asyncIterator]();
    await it3.next();
    await it3.return!();
    expect(await within(reads, 2000)).toEqual([600_000, 600_000]);
  });

  it('with every branch given up, the source is drained to its end', async () => {
    const source = new PassThrough();
    for (let i = 0; i < 60; i++) source.write(Buffer.alloc(10_000, i));
    source.end();
    for (const branch of tee(source, 2)) branch.destroy();
    await within(new Promise((r) => source.once('end', r)), 2000);
    expect(source.readableEnded).toBe(true);
  });

  it('a source error fails every branch', async () => {
    const source = new PassThrough();
    const [a, b] = tee(source, 2);
    source.destroy(new Error('bare LF'));
    await expect(total(a!)).rejects.toThrow('bare LF');
    await expect(total(b!)).rejects.toThrow('bare LF');
  });
});
