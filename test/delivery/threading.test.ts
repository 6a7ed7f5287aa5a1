import { describe, expect, it } from 'vitest';
import {
  baseSubject,
  cleanMessageIds,
  inboundReferences,
  replyReferences,
  replySubject,
} from '../../src/core/flows/delivery/threading.js';
import { overallStatus } from '../../src/core/flows/outbound/delivery-status.js';
import { recipientsOf } from '../../src/core/flows/sending/outbound.store.js';
import { sanitizeContentType, sanitizeFilename } from '../../src/core/state/attachments/attachment-meta.js';

describe('threading rules', () => {
  it('adds exactly one "Re:" whatever the parent carried', () => {
    expect(replySubject('Hello')).toBe('Re: Hello');
    expect(replySubject('Re: Hello')).toBe('Re: Hello');
    expect(replySubject('RE: re:  Aw: Re[3]: Hello')).toBe('Re: Hello');
    expect(replySubject('')).toBe('Re: ');
    expect(baseSubject('Regarding: x')).toBe('Regarding: x');
  });

  it('chains References as RFC 5322 §3.6.4 says, keeping only well-formed msg-ids', () => {
    expect(replyReferences({ references: ['<a@x>', '<b@x>'], internetMessageId: '<c@x>' })).toEqual([
      '<a@x>',
      '<b@x>',
      '<c@x>',
    ]);
    expect(replyReferences({ references: [], internetMessageId: null })).toEqual([]);
    expect(inboundReferences('<p@x>', [])).toEqual(['<p@x>']);
    expect(inboundReferences('<p@x>', ['<a@x>', '<p@x>'])).toEqual(['<a@x>', '<p@x>']);
    expect(inboundReferences('<p@x>', ['<a@x>'])).toEqual(['<a@x>', '<p@x>']);
    expect(cleanMessageIds(['junk', ' <a@x> ', '<a@x>', null, '<no-at>', `<${'x'.repeat(1000)}@y>`])).toEqual([
      '<a@x>',
    ]);
  });

  it('derives a message status from its recipients', () => {
    expect(overallStatus(['delivered', 'delivered'])).toBe('delivered');
    expect(overallStatus(['delivered', 'queued'])).toBe('queued');
    expect(overallStatus(['queued', 'deferred', 'delivered'])).toBe('deferred');
    expect(overallStatus(['delivered', 'failed'])).toBe('failed');
    expect(overallStatus(['failed'])).toBe('failed');
  });

  it('delivers each address once, To before Cc before Bcc', () => {
    expect(recipientsOf({ to: ['a@x.test'], cc: ['a@x.test', 'b@x.test'], bcc: ['b@x.test', 'c@x.test'] })).toEqual([
      { address: 'a@x.test', kind: 'to' },
      { address: 'b@x.test', kind: 'cc' },
      { address: 'c@x.test', kind: 'bcc' },
    ]);
  });
});

describe('attachment metadata', () => {
  it('keeps only a clean last path segment as the filename', () => {
    expect(sanitizeFilename('C:\\fakepath\\report.pdf')).toBe('report.pdf');
    expect(sanitizeFilename('../../etc/passwd')).toBe('passwd');
    expect(sanitizeFilename('a\r\nContent-Type: x.txt')).toBe('aContent-Type: x.txt');
    expect(sanitizeFilename('evil\u202Etxt.exe')).toBe('eviltxt.exe');
    expect(sanitizeFilename('say "hi".txt')).toBe('say _hi_.txt');
    expect(sanitizeFilename('..')).toBe('attachment');
    expect(sanitizeFilename(null)).toBe('attachment');
    const long = sanitizeFilename(`${'😀'.repeat(200)}.pdf`);
    expect(long.length).toBeLessThanOrEqual(255);
    expect(long.endsWith('.pdf')).toBe(true);
    expect(long).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('accepts a well-formed media type and drops its parameters', () => {
    expect(sanitizeContentType('Text/Plain; charset=utf-8')).toBe('text/plain');
    expect(sanitizeContentType('application/vnd.openxmlformats-officedocument.wordprocessingml.document')).toBe(
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    );
    expect(sanitizeContentType('text/plain\r\nX-Evil: 1')).toBe('application/octet-stream');
    expect(sanitizeContentType(undefined)).toBe('application/octet-stream');
  });
});
