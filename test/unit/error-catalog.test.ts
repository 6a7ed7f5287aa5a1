import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { z } from 'zod';
import { AppError, ERRORS, type ErrorCode } from '../../src/core/base/errors.js';
import { toAppError } from '../../src/core/base/error-mapping.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { httpError } from '../../src/channels/http/envelope.js';
import { resourceError, resourceRpcCode, toolError } from '../../src/channels/mcp/errors.js';
import { replyOf } from '../../src/channels/smtp/replies.js';
import { socketError } from '../../src/channels/realtime/handshake.js';

const CODES = Object.keys(ERRORS) as ErrorCode[];
const textOf = (r: ReturnType<typeof toolError>) => JSON.parse((r.content[0] as { text: string }).text);

/** The rows of the "Errors" table in docs/api.md, by errorCode. */
function documentedRows(): Map<string, string[]> {
  const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Errors\n'), doc.indexOf('\n## ', doc.indexOf('\n## Errors\n') + 5));
  const rows = new Map<string, string[]>();
  for (const line of section.split('\n')) {
    const m = /^\| `([A-Z0-9_]+)` \|(.*)\|$/.exec(line);
    if (m)
      rows.set(
        m[1]!,
        m[2]!.split(/(?<!\\)\|/).map((c) => c.trim()),
      );
  }
  return rows;
}

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

describe('every catalog code on every channel', () => {
  it.each(CODES)('%s: HTTP envelope, MCP tool and resource error, SMTP reply, Socket.IO data', (code) => {
    const entry = ERRORS[code];
    const e = new AppError(code);

    const http = httpError(e, true);
    expect(http.status).toBe(entry.status);
    expect(http.body).toMatchObject({ data: null, code: entry.status, errorCode: code, errMsg: entry.message });
    expect(http.body.msg).toBe(STATUS_CODES[entry.status]);
    if (entry.status === 401) expect(http.headers['WWW-Authenticate']).toMatch(/^Bearer realm="mailbox-service"/);
    else expect(http.headers['WWW-Authenticate']).toBeUndefined();

    const payload = { code: entry.status, errorCode: code, errMsg: entry.message };
    const tool = toolError(e, silentLogger, 't');
    expect(tool.isError).toBe(true);
    expect(tool.structuredContent).toBeUndefined();
    expect(textOf(tool)).toEqual(payload);
    expect(tool._meta?.['mailbox-service/error']).toEqual(payload);
    const resource = resourceError(e, silentLogger, 'mailbox://x/inbox');
    expect(resource.data).toEqual(payload);
    expect(resource.code).toBe(resourceRpcCode(entry.status));

    const smtp = replyOf(e, 'mx.test');
    expect(`${smtp.code} ${smtp.text}`).toBe(entry.smtp.replace('{host}', 'mx.test'));
    expect(smtp.text).toMatch(/^[245]\.\d{1,3}\.\d{1,3} /);

    expect(socketError(e, silentLogger, 't').data).toEqual(payload);
  });

  it('documents every catalog code in docs/api.md as the channels render it, and nothing else', () => {
    const rows = documentedRows();
    expect([...rows.keys()].sort()).toEqual([...CODES].sort());
    for (const code of CODES) {
      const entry = ERRORS[code];
      const [status, smtp, mcp, socket, message] = rows.get(code)!;
      expect({ code, status, smtp, mcp, socket, message }).toEqual({
        code,
        status: String(entry.status),
        smtp: `\`${entry.smtp}\``,
        mcp: `${textOf(toolError(new AppError(code), silentLogger, 't')).code} / ${resourceError(new AppError(code), silentLogger, 'x').code}`,
        socket: String(socketError(new AppError(code), silentLogger, 't').data.code),
        message: entry.message,
      });
    }
  });

  it('adds Retry-After (HTTP), the wait (SMTP) and retryAfterSeconds (MCP, Socket.IO) to a 429', () => {
    const e = new AppError('AUTH_THROTTLED', undefined, { retryAfterSeconds: 12 });
    expect(httpError(e, false).headers['Retry-After']).toBe('12');
    expect(replyOf(e).text).toBe('4.7.0 Too many failed authentication attempts, try again in 12 s');
    expect(textOf(toolError(e, silentLogger, 't'))).toMatchObject({ code: 429, retryAfterSeconds: 12 });
    expect(socketError(e, silentLogger, 't').data).toMatchObject({ code: 429, retryAfterSeconds: 12 });
  });

  it('names invalid_token in WWW-Authenticate only when credentials were sent (RFC 6750 §3.1)', () => {
    const e = new AppError('UNAUTHENTICATED', 'Unknown access token.');
    expect(httpError(e, false).headers['WWW-Authenticate']).toBe('Bearer realm="mailbox-service"');
    expect(httpError(e, true).headers['WWW-Authenticate']).toBe(
      'Bearer realm="mailbox-service", error="invalid_token", error_description="Unknown access token."',
    );
  });
});

describe('toAppError: anything thrown to the catalog, once for every channel', () => {
  it('keeps an AppError as it is', () => {
    const e = new AppError('NOT_FOUND', 'Message not found.');
    expect(toAppError(e)).toBe(e);
  });

  it('maps a zod problem to its field code, worded field: message', () => {
    const schema = z.object({ mailboxAddress: z.string().max(3), cursor: z.string().max(1), limit: z.number() });
    const fail = (v: unknown) => toAppError(schema.safeParse(v).error);
    expect(fail({ mailboxAddress: 'long', cursor: 'x', limit: 1 })).toMatchObject({
      code: 'MAILBOX_ADDRESS_INVALID',
      status: 400,
    });
    expect(fail({ mailboxAddress: 'a', cursor: 'xx', limit: 1 }).code).toBe('CURSOR_INVALID');
    expect(fail({ mailboxAddress: 'a', cursor: 'x', limit: 'no' })).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: expect.stringMatching(/^limit: /),
    });
  });

  it('maps a storage outage, even wrapped as a cause, to UNAVAILABLE (503 / 451 4.3.0)', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(toAppError(refused).code).toBe('UNAVAILABLE');
    expect(toAppError(new Error('query failed', { cause: new Error('wrapped', { cause: refused }) })).code).toBe(
      'UNAVAILABLE',
    );
    expect(toAppError(Object.assign(new Error('x'), { code: '57P01' })).status).toBe(503);
  });

  it('maps the errors parsers throw with an HTTP status', () => {
    expect(toAppError(Object.assign(new Error('too big'), { status: 413, type: 'entity.too.large' })).code).toBe(
      'PAYLOAD_TOO_LARGE',
    );
    expect(
      toAppError(Object.assign(new Error('Unexpected token'), { status: 400, type: 'entity.parse.failed' })).code,
    ).toBe('JSON_INVALID');
    expect(toAppError(Object.assign(new Error('x'), { statusCode: 415 })).code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(toAppError(Object.assign(new Error('x'), { status: 405 })).code).toBe('METHOD_NOT_ALLOWED');
    expect(toAppError(Object.assign(new Error('bad field'), { status: 400, expose: true }))).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'bad field',
    });
    expect(toAppError(Object.assign(new Error('secret'), { status: 400 })).message).toBe(
      ERRORS.VALIDATION_FAILED.message,
    );
  });

  it('maps anything else, strings included, to INTERNAL without its message', () => {
    for (const thrown of [new Error('secret stack detail'), 'a string', 42, null, undefined, { status: 502 }]) {
      const e = toAppError(thrown);
      expect(e.code).toBe('INTERNAL');
      expect(e.message).toBe('Internal error.');
      expect(JSON.stringify(httpError(e, false).body)).not.toContain('secret');
    }
  });
});
