import { describe, expect, it } from 'vitest';
import {
  passwordSchema,
  setPasswordInputSchema,
  PASSWORD_LENGTH,
} from '../../src/core/state/mailboxes/mailbox.schemas.js';
import { assertRecipientCap } from '../../src/core/flows/delivery/recipient-cap.js';
import { retryAfterSeconds } from '../../src/core/base/ratelimit/limiter.js';
import { parseInput } from '../../src/core/base/validation.js';
import { z } from 'zod';

// Small rules written once and shared by several callers (docs/api.md). Each caller's
// own tests exercise them through a channel; these pin the rule itself.

describe('password length (API set-password and declared resources)', () => {
  it('is 8 to 1024 characters', () => {
    expect(PASSWORD_LENGTH).toEqual({ min: 8, max: 1024 });
    for (const [length, ok] of [
      [7, false],
      [8, true],
      [1024, true],
      [1025, false],
    ] as const) {
      expect(passwordSchema.safeParse('p'.repeat(length)).success, String(length)).toBe(ok);
      expect(setPasswordInputSchema.safeParse({ password: 'p'.repeat(length) }).success, String(length)).toBe(ok);
    }
  });
});

describe('recipient cap (HTTP, MCP, SMTP submission and MX)', () => {
  it('allows up to the cap and refuses one more with TOO_MANY_RECIPIENTS', () => {
    expect(() => assertRecipientCap(3, 3)).not.toThrow();
    expect(() => assertRecipientCap(4, 3, 'RCPT TO')).toThrow(
      expect.objectContaining({
        code: 'TOO_MANY_RECIPIENTS',
        status: 400,
        message: 'Too many recipients: 4 (RCPT TO) exceeds 3.',
      }),
    );
  });
});

describe('Retry-After of every limiter', () => {
  it('is whole seconds, rounded up, at least 1', () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1001)).toBe(2);
  });
});

describe('validation problem → error code (HTTP, MCP, Socket.IO handshake)', () => {
  const schema = z.object({ mailboxAddress: z.string().max(3), expiresAtTs: z.number(), cursor: z.string().max(1) });
  const codeOf = (value: unknown) => {
    try {
      parseInput(schema, value, 'body');
    } catch (e) {
      return [(e as { code: string }).code, (e as Error).message];
    }
    return null;
  };
  it('gives the named fields their own code and words it field: message', () => {
    const ok = { mailboxAddress: 'a', expiresAtTs: 1, cursor: 'c' };
    expect(codeOf({ ...ok, mailboxAddress: 'long' })?.[0]).toBe('MAILBOX_ADDRESS_INVALID');
    expect(codeOf({ ...ok, expiresAtTs: 'x' })?.[0]).toBe('EXPIRY_INVALID');
    expect(codeOf({ ...ok, cursor: 'cc' })?.[0]).toBe('CURSOR_INVALID');
    expect(codeOf('not an object')).toEqual(['VALIDATION_FAILED', expect.stringMatching(/^body: /)]);
    expect(codeOf({ ...ok, mailboxAddress: 'a\u0000' })).toEqual([
      'TEXT_INVALID',
      'mailboxAddress: must not contain NUL characters',
    ]);
    expect(codeOf(ok)).toBeNull();
  });
});
