import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../errors.js';

/**
 * Opaque keyset cursors: base64url(JSON position) + "." + HMAC tag. The tag binds the cursor to
 * the list it came from (`scope`, e.g. mailbox + direction), so a tampered, truncated or
 * transplanted cursor is a 400, never a 500 and never a peek into another list.
 */
export class CursorCodec {
  /** Imported once: an HMAC keyed with a Buffer imports the key on every call (~8x the cost). */
  private readonly key: KeyObject;

  constructor(key: Buffer) {
    this.key = createSecretKey(key);
  }

  encode(scope: string, position: Record<string, string | number>): string {
    const body = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${body}.${this.tag(scope, body)}`;
  }

  decode<T>(scope: string, cursor: string, schema: z.ZodType<T>): T {
    const [body, tag, extra] = cursor.split('.');
    if (!body || !tag || extra !== undefined) throw new AppError('CURSOR_INVALID');
    const expected = Buffer.from(this.tag(scope, body));
    const given = Buffer.from(tag);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw new AppError('CURSOR_INVALID');
    try {
      return schema.parse(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')));
    } catch {
      throw new AppError('CURSOR_INVALID');
    }
  }

  private tag(scope: string, body: string): string {
    return createHmac('sha256', this.key).update(scope).update('\0').update(body).digest('base64url').slice(0, 22);
  }
}

/** Page size rule shared by every list (spec Limits: default 100, maximum 200, else 400). */
export const limitSchema = z.coerce.number().int().min(1).max(200).default(100);

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  totalCount: number;
}
