import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { spool } from '../../src/core/mail/spool.js';

// spool (src/core/mail/spool.ts): a message within the limit is held in memory (written inside the
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
