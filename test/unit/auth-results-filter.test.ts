import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { OurAuthResultsFilter, withoutOurAuthResults } from '../../src/core/state/mail/auth-results-filter.js';

// Arriving Authentication-Results fields with our authserv-id are removed (RFC 8601 §5), from the
// top-level header only. A small message is filtered whole (withoutOurAuthResults), a large one as
// a stream (OurAuthResultsFilter): both must give the same bytes for every shape of message.

const ours = 'mail.test';
const messages: [string, string][] = [
  [
    'ours (one folded, one upper-case) removed, foreign kept',
    'Authentication-Results: mail.test; dkim=pass\r\nAuthentication-Results: (c) MAIL.TEST;\r\n\tspf=pass\r\n' +
      'Authentication-Results: relay.example; spf=pass\r\nSubject: hi\r\n\r\nbody\r\n',
  ],
  ['none of ours: unchanged', 'Subject: hi\r\nAuthentication-Results: other.test; none\r\n\r\nbody\r\n'],
  ['ours in the body only: unchanged', 'Subject: hi\r\n\r\nAuthentication-Results: mail.test; dkim=pass\r\n'],
  ['no body, no empty line', 'Authentication-Results: mail.test; spf=pass\r\nSubject: hi\r\n'],
  ['empty header section', '\r\nAuthentication-Results: mail.test; spf=pass\r\n'],
];

async function streamed(message: Buffer, chunk: number): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for (let i = 0; i < message.length; i += chunk) pieces.push(message.subarray(i, i + chunk));
  const out: Buffer[] = [];
  for await (const part of Readable.from(pieces).pipe(new OurAuthResultsFilter(ours))) out.push(part as Buffer);
  return Buffer.concat(out);
}

describe('our Authentication-Results removed', () => {
  it.each(messages)('%s: the held and the streamed filter agree', async (_name, text) => {
    const message = Buffer.from(text, 'latin1');
    const whole = withoutOurAuthResults(message, ours);
    for (const chunk of [1, 7, message.length])
      expect((await streamed(message, chunk)).toString('latin1')).toBe(whole.toString('latin1'));
  });

  it('removes exactly our fields', () => {
    const out = withoutOurAuthResults(Buffer.from(messages[0]![1], 'latin1'), ours).toString('latin1');
    expect(out).toBe('Authentication-Results: relay.example; spf=pass\r\nSubject: hi\r\n\r\nbody\r\n');
    expect(withoutOurAuthResults(Buffer.from(messages[3]![1]), ours).toString()).toBe('Subject: hi\r\n');
  });
});
