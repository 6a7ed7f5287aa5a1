import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError, ERRORS, type ErrorCode } from '../../src/core/base/errors.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { parseArguments, resourceError, toolError } from '../../src/channels/mcp/errors.js';

// The one place MCP maps errors: every catalog code becomes a tool error carrying the HTTP
// status as `code`, the catalog key as `errorCode` and the same message as the envelope's errMsg;
// internals never leak.

const payloadOf = (result: ReturnType<typeof toolError>) => JSON.parse((result.content[0] as { text: string }).text);

describe('MCP error mapping', () => {
  it('maps every catalog code to isError with { code: HTTP status, errorCode, errMsg }', () => {
    for (const [code, entry] of Object.entries(ERRORS)) {
      const result = toolError(new AppError(code as ErrorCode), silentLogger, 'test');
      expect(result.isError, code).toBe(true);
      expect(result.structuredContent, code).toBeUndefined();
      expect(payloadOf(result), code).toEqual({ code: entry.status, errorCode: code, errMsg: entry.message });
      expect(result._meta?.['mailbox-service/error'], code).toEqual(payloadOf(result));
      expect(resourceError(new AppError(code as ErrorCode), silentLogger, 'x').data, code).toEqual({
        code: entry.status,
        errorCode: code,
        errMsg: entry.message,
      });
    }
  });

  it('adds retryAfterSeconds to a 429 and keeps a detail message', () => {
    const err = new AppError('RATE_LIMITED', 'Slow down.', { retryAfterSeconds: 12 });
    expect(payloadOf(toolError(err, silentLogger, 't'))).toEqual({
      code: 429,
      errorCode: 'RATE_LIMITED',
      errMsg: 'Slow down.',
      retryAfterSeconds: 12,
    });
  });

  it('never leaks an unexpected error; an unreachable database is 503', () => {
    expect(payloadOf(toolError(new Error('secret stack detail'), silentLogger, 't'))).toEqual({
      code: 500,
      errorCode: 'INTERNAL',
      errMsg: 'Internal error.',
    });
    expect(
      payloadOf(toolError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), silentLogger, 't')),
    ).toMatchObject({ code: 503, errorCode: 'UNAVAILABLE' });
  });

  it('words argument errors like HTTP: field-specific codes, "field: message"', () => {
    const schema = z
      .object({ mailboxAddress: z.string().max(3).optional(), limit: z.number().max(2).optional() })
      .strict();
    expect(() => parseArguments(schema, { limit: 5 })).toThrow(
      expect.objectContaining({ code: 'VALIDATION_FAILED', status: 400, message: expect.stringMatching(/^limit: /) }),
    );
    expect(() => parseArguments(schema, { mailboxAddress: 'long' })).toThrow(
      expect.objectContaining({ code: 'MAILBOX_ADDRESS_INVALID' }),
    );
    // An unknown key is named as unknown, as on HTTP (core/validation.ts).
    expect(() => parseArguments(schema, { other: 1 })).toThrow(
      expect.objectContaining({ code: 'VALIDATION_FAILED', message: 'other: unknown key' }),
    );
    expect(parseArguments(schema, undefined)).toEqual({});
  });

  it('a resource 404 is MCP\'s "Resource not found" (-32002)', () => {
    expect(resourceError(new AppError('NOT_FOUND'), silentLogger, 'x').code).toBe(-32002);
    expect(resourceError(new AppError('MAILBOX_ADDRESS_FORBIDDEN'), silentLogger, 'x').code).toBe(-32602);
  });
});
