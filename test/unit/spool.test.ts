import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { heldIfSmall, spool } from '../../src/core/state/mail/spool.js';

// spool (src/core/state/mail/spool.ts): a message within the limit is held in memory (written inside the
// transaction later); past it, every byte goes to the streaming store in order, none held whole.

const pieces = (sizes: number[]) => Readable.from(sizes.map((n, i) => Buffer.alloc(n, 97 + i)));
const drain = async (r: Readable) => {
  const parts: Buffer[] = [];
  for await (const p of r) parts.push(p as Buffer);
  return Buffer.concat(parts);
};

describe('spool', () => {
  it('holds a message within the limit and never calls the store', async () => {
    let stored = false;
    const result = await spool(pieces([10, 20, 30]), 60, async () => (stored = true));
    expect(stored).toBe(false);
    expect('held' in result && result.held).toEqual(
      Buffer.concat([Buffer.alloc(10, 97), Buffer.alloc(20, 98), Buffer.alloc(30, 99)]),
    );
  });

  it('streams a larger message to the store, bytes read so far first, in order', async () => {
    const result = await spool(pieces([10, 20, 30, 40]), 25, drain);
    expect('stored' in result && result.stored).toEqual(
      Buffer.concat([Buffer.alloc(10, 97), Buffer.alloc(20, 98), Buffer.alloc(30, 99), Buffer.alloc(40, 100)]),
    );
  });

  it('a store that gives up destroys the source, so the sender is not left waiting', async () => {
    const source = pieces([10, 20, 30, 40]);
    await expect(
      spool(source, 5, async (s) => {
        s.destroy();
        throw new Error('too large');
      }),
    ).rejects.toThrow('too large');
    await new Promise((r) => setImmediate(r));
    expect(source.destroyed).toBe(true);
  });
});

describe('heldIfSmall', () => {
  it('gives the whole message as one buffer when it ends within the limit', async () => {
    const held = await heldIfSmall(pieces([10, 20, 30]), 60);
    expect(Buffer.isBuffer(held)).toBe(true);
    expect(held).toEqual(Buffer.concat([Buffer.alloc(10, 97), Buffer.alloc(20, 98), Buffer.alloc(30, 99)]));
  });

  it('past the limit, a stream of every byte in order, none lost at the switch', async () => {
    const result = await heldIfSmall(pieces([10, 20, 30, 40]), 25);
    expect(Buffer.isBuffer(result)).toBe(false);
    expect(await drain(result as Readable)).toEqual(
      Buffer.concat([Buffer.alloc(10, 97), Buffer.alloc(20, 98), Buffer.alloc(30, 99), Buffer.alloc(40, 100)]),
    );
  });

  it('a source error before the decision rejects; after it, fails the stream', async () => {
    const early = new PassThrough();
    const pending = heldIfSmall(early, 100);
    early.write(Buffer.alloc(10));
    early.destroy(new Error('bare LF'));
    await expect(pending).rejects.toThrow('bare LF');

    const late = new PassThrough();
    const switched = heldIfSmall(late, 5);
    late.write(Buffer.alloc(10));
    const rest = (await switched) as Readable;
    late.destroy(new Error('too large'));
    await expect(drain(rest)).rejects.toThrow('too large');
  });
});
