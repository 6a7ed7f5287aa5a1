import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/base/errors.js';
import {
  HandedOffCommandError,
  MAX_REQUEST_BYTES,
  bindableAddress,
  decodeAnswer,
  decodeRequest,
  encodeAnswer,
  encodeRequest,
  failure,
  request,
} from '../../src/runtime/admin-socket-protocol.js';

// The admin hand-off's wire form (docs/api.md, "The mailbox command"): one JSON request line, one
// JSON answer; anything else is refused with a sentence saying what is wrong.

describe('requests', () => {
  it('round-trip as one line', () => {
    const req = request('mailbox create', ['ops@x.example'], { displayName: 'Ops\nline' });
    const line = encodeRequest(req);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(decodeRequest(line.trimEnd())).toEqual(req);
    expect(req.v).toBe(1);
  });

  it.each([
    ['not JSON', '{"v":1', 'malformed request: not JSON'],
    ['another version', '{"v":2,"command":"x","args":[],"options":{}}', /^malformed request: v: /],
    ['an unknown key', '{"v":1,"command":"x","args":[],"options":{},"as":"root"}', /^malformed request: .*as/],
    ['a number among the arguments', '{"v":1,"command":"x","args":[1],"options":{}}', /^malformed request: args\.0: /],
    [
      'an option that is not a string',
      '{"v":1,"command":"x","args":[],"options":{"a":true}}',
      /^malformed request: options\.a: /,
    ],
    ['no command', '{"v":1,"command":"","args":[],"options":{}}', /^malformed request: command: /],
  ])('refuses %s', (_what, text, message) => {
    expect(() => decodeRequest(text)).toThrow(message);
  });

  it('refuses one over the size bound before parsing it', () => {
    const text = JSON.stringify(request('domain create', ['x'.repeat(MAX_REQUEST_BYTES)], {}));
    expect(() => decodeRequest(text)).toThrow(`request too large: more than ${MAX_REQUEST_BYTES} bytes`);
  });
});

describe('answers', () => {
  it('carry the output, or the error with its exit status and catalog code', () => {
    const ok = { exitCode: 0 as const, output: [{ address: 'a@b.example' }] };
    expect(decodeAnswer(encodeAnswer(ok))).toEqual(ok);
    expect(failure(new AppError('VALIDATION_FAILED', 'password: too short'))).toEqual({
      exitCode: 1,
      error: { message: 'password: too short', errorCode: 'VALIDATION_FAILED' },
    });
    expect(failure(new HandedOffCommandError('gone', 3))).toEqual({ exitCode: 3, error: { message: 'gone' } });
    expect(failure('odd')).toEqual({ exitCode: 1, error: { message: 'odd' } });
    expect(decodeAnswer(encodeAnswer(failure(new Error('two\nlines'))))).toEqual({
      exitCode: 1,
      error: { message: 'two\nlines' },
    });
  });

  it('refuses a success with an error, or a failure with status 0', () => {
    expect(() => decodeAnswer('{"exitCode":0,"error":{"message":"x"}}')).toThrow(/^malformed answer/);
    expect(() => decodeAnswer('{"exitCode":1,"output":1}')).toThrow(/^malformed answer/);
    expect(() => decodeAnswer('')).toThrow('malformed answer: not JSON');
  });
});

describe('bindableAddress', () => {
  it('is the path when bind(2) takes it, else the path from the working directory, else null', () => {
    expect(bindableAddress('/tmp/d/admin.sock')).toBe('/tmp/d/admin.sock');
    // The test runs in the checkout, deeper than `/`: the absolute name of `near` is too long.
    const near = path.join(process.cwd(), 'a'.repeat(90), 'admin.sock');
    expect(bindableAddress(near)).toBe(path.join('a'.repeat(90), 'admin.sock'));
    expect(bindableAddress(path.join(process.cwd(), 'x'.repeat(120), 'admin.sock'))).toBeNull();
  });
});
