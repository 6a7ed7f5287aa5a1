import { describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { prepareForTransfer } from '../../src/core/state/mail/raw-headers.js';
import { RawGuard, DEFAULT_HEADER_LIMITS, MAX_LINE_OCTETS } from '../../src/core/state/mail/raw-guard.js';
import { hasEightBitOctets, needsSmtpUtf8, toSevenBit } from '../../src/core/state/mail/seven-bit.js';
import { envelopeAddress, isAddress, isDomainName, normalizeAddress } from '../../src/core/base/address.js';

const crlf = (...lines: string[]) => Buffer.from(lines.join('\r\n'));

describe('prepareForTransfer keeps the header/body boundary and the body byte for byte', () => {
  it('one empty line between header and body, body unchanged', () => {
    const body = crlf('', 'line one', '', 'line three', '');
    const raw = Buffer.concat([crlf('From: a@x.test', 'Bcc: b@y.test', 'Content-Transfer-Encoding: 8bit', ''), body]);
    const out = prepareForTransfer(raw, { messageId: '<m@x.test>', date: new Date(0) });
    const sep = out.indexOf('\r\n\r\n');
    expect(out.subarray(sep + 2).equals(body)).toBe(true);
    expect(out.toString('latin1')).not.toContain('\r\n\r\n\r\n');
    expect(out.toString('latin1')).not.toContain('Bcc:');
  });

  it('a message with no header fields left keeps its body as it is', () => {
    const raw = crlf('Bcc: b@y.test', '', 'body');
    const out = prepareForTransfer(raw, { messageId: null, date: new Date(0) }).toString('latin1');
    expect(out).toMatch(/^Date: .*\r\n\r\nbody$/);
  });
});

describe('RawGuard line length', () => {
  const run = async (raw: Buffer, chunk: number) => {
    const guard = new RawGuard({ maxBytes: 1e7, ...DEFAULT_HEADER_LIMITS, maxLineOctets: MAX_LINE_OCTETS });
    const parts: Buffer[] = [];
    for (let i = 0; i < raw.length; i += chunk) parts.push(raw.subarray(i, i + chunk));
    try {
      await buffer(Readable.from(parts).pipe(guard));
      return 'ok';
    } catch (err) {
      return (err as { code?: string }).code ?? String(err);
    }
  };
  it.each([1, 7, 999, 4096])('998 octets pass and 999 fail whatever the chunking (%i)', async (chunk) => {
    expect(await run(crlf('Subject: x', '', 'a'.repeat(998), ''), chunk)).toBe('ok');
    expect(await run(crlf('Subject: x', '', 'a'.repeat(999), ''), chunk)).toBe('LINE_TOO_LONG');
    expect(await run(crlf('Subject: x', '', 'a'.repeat(1500)), chunk)).toBe('LINE_TOO_LONG');
  });
  it('is off without maxLineOctets (port 25 stores long lines)', async () => {
    const guard = new RawGuard({ maxBytes: 1e7, ...DEFAULT_HEADER_LIMITS });
    const out = await buffer(Readable.from([crlf('Subject: x', '', 'a'.repeat(5000), '')]).pipe(guard));
    expect(out.length).toBe(5000 + 16);
  });
});

describe('7-bit form for a server without 8BITMIME', () => {
  it('re-encodes 8-bit parts as quoted-printable and keeps the rest', async () => {
    const raw = crlf(
      'From: a@x.test',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      `Grüße ${'x'.repeat(1200)}`,
      '--b1',
      'Content-Type: application/octet-stream',
      'Content-Transfer-Encoding: base64',
      '',
      'AAAA',
      '--b1--',
      '',
    );
    expect(hasEightBitOctets(raw)).toBe(true);
    const out = await toSevenBit(raw);
    expect(hasEightBitOctets(out)).toBe(false);
    const text = out.toString('latin1');
    expect(text).toContain('Content-Transfer-Encoding: quoted-printable\r\n\r\nGr=C3=BC=C3=9Fe ');
    expect(text).toContain('Content-Transfer-Encoding: base64\r\n\r\nAAAA\r\n--b1--');
    expect(Math.max(...text.split('\r\n').map((l) => l.length))).toBeLessThanOrEqual(78);
  });
});

describe('internationalized addresses (RFC 6531)', () => {
  it('accepts UTF-8 local parts and IDN domains, refuses controls, spaces and invisible characters', () => {
    for (const ok of ['jörg@bücher.example', '用户@例子.广告', 'a@b.test']) expect(isAddress(ok)).toBe(true);
    for (const bad of ['a b@x.test', 'a\u200b@x.test', 'a\u202e@x.test', '"q"@x.test', 'a@[1.2.3.4]', 'a@b'])
      expect(isAddress(bad)).toBe(false);
    expect(isDomainName('bücher.example')).toBe(true);
  });
  it('normalizes one way: lower case, NFC, U-label domain', () => {
    expect(normalizeAddress('JÖRG@XN--BCHER-KVA.EXAMPLE')).toBe('jörg@bücher.example');
    expect(normalizeAddress('jo\u0308rg@bücher.example')).toBe('jörg@bücher.example');
  });
  it('goes into an envelope with A-labels where the local part is ASCII, so SMTPUTF8 is needed only for UTF-8 local parts', () => {
    expect(envelopeAddress('joe@bücher.example')).toBe('joe@xn--bcher-kva.example');
    expect(
      needsSmtpUtf8({ from: envelopeAddress('joe@bücher.example'), to: ['b@y.test'] }, crlf('From: joe', '', 'x')),
    ).toBe(false);
    expect(needsSmtpUtf8({ from: 'jörg@bücher.example', to: ['b@y.test'] }, crlf('From: x', '', 'x'))).toBe(true);
    expect(needsSmtpUtf8({ from: 'a@x.test', to: ['b@y.test'] }, Buffer.from('From: Jörg <a@x.test>\r\n\r\nx'))).toBe(
      true,
    );
  });
});

describe('internationalized hosted domains', () => {
  it('are stored in one form whichever form a resource or a caller names them in', async () => {
    const { normalizeDomain } = await import('../../src/core/base/address.js');
    expect(normalizeDomain(' XN--BCHER-KVA.Example ')).toBe('bücher.example');
    expect(normalizeDomain('Bücher.Example')).toBe('bücher.example');
    expect(normalizeDomain('example.test')).toBe('example.test');
  });
});
