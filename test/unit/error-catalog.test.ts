import { describe, expect, it } from 'vitest';
import { STATUS_CODES } from 'node:http';
import { AppError, ERRORS, type ErrorCode } from '../../src/core/errors.js';

describe('error catalog', () => {
  it('gives every code an HTTP status with a reason phrase and an SMTP reply with an enhanced code', () => {
    for (const [code, entry] of Object.entries(ERRORS)) {
      expect(STATUS_CODES[entry.status], code).toBeDefined();
      expect(entry.smtp, code).toMatch(/^[245]\d\d [245]\.\d{1,3}\.\d{1,3} \S/);
      expect(entry.message.length, code).toBeGreaterThan(3);
      const err = new AppError(code as ErrorCode);
      expect(err.status).toBe(entry.status);
      expect(err.smtpReply).toBe(entry.smtp);
    }
  });

  it('uses the exact SMTP reply the spec prescribes for authentication failures', () => {
    expect(ERRORS.UNAUTHENTICATED.smtp).toBe('535 5.7.8 Authentication credentials invalid');
    expect(ERRORS.SCOPE_MISSING.smtp).toBe('535 5.7.8 Authentication credentials invalid');
  });
});
