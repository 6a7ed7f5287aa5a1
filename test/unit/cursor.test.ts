import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { CursorCodec } from '../../src/core/base/paging/cursor.js';
import { AppError } from '../../src/core/base/errors.js';

const position = z.object({ t: z.number(), i: z.string() });

describe('cursor codec', () => {
  const codec = new CursorCodec(randomBytes(32));

  it('round-trips a position for the same list', () => {
    const c = codec.encode('mbx_1:all', { t: 5, i: 'msg_a' });
    expect(codec.decode('mbx_1:all', c, position)).toEqual({ t: 5, i: 'msg_a' });
  });

  it('turns tampered, truncated, foreign and garbage cursors into CURSOR_INVALID', () => {
    const c = codec.encode('mbx_1:all', { t: 5, i: 'msg_a' });
    const forged = Buffer.from(JSON.stringify({ t: 6, i: 'msg_a' })).toString('base64url') + '.' + c.split('.')[1];
    for (const bad of [forged, c.slice(0, -2), c + '.x', 'garbage', '', '.', c.replace('.', '')]) {
      try {
        codec.decode('mbx_1:all', bad, position);
        throw new Error(`accepted ${bad}`);
      } catch (err) {
        expect(err).toBeInstanceOf(AppError);
        expect((err as AppError).code).toBe('CURSOR_INVALID');
      }
    }
    expect(() => codec.decode('mbx_2:all', c, position)).toThrow(AppError);
    expect(() => new CursorCodec(randomBytes(32)).decode('mbx_1:all', c, position)).toThrow(AppError);
  });
});
