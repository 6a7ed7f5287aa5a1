import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { snippetOf } from '../../src/core/state/messages/snippet.js';

// snippetOf reads a body only as far as its snippet needs; the plain form, which flattens the
// whole body first, is the reference here, on random text of the pieces that matter.
function plainSnippetOf(text: string): string {
  if (!text) return '';
  const lines: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line === '-- ') break;
    if (!line.startsWith('>')) lines.push(line);
  }
  const flat = lines.join(' ').replace(/\s+/g, ' ').trim();
  if (flat.length <= 140) return flat;
  const cut = flat.slice(0, 140);
  const space = cut.lastIndexOf(' ');
  return `${space > 70 ? cut.slice(0, space) : cut}…`;
}

const pieces = [
  '\n',
  '\r\n',
  '\r',
  ' ',
  '  ',
  '\t',
  '\u00a0',
  '>',
  '> quoted',
  '-- ',
  '--',
  'word',
  'a',
  'é😀',
  'x'.repeat(60),
];
const text = fc.array(fc.constantFrom(...pieces), { maxLength: 200 }).map((p) => p.join(''));

describe('snippetOf', () => {
  it('is the plain flatten-then-cut form', () => {
    fc.assert(
      fc.property(text, (s) => {
        expect(snippetOf(s)).toBe(plainSnippetOf(s));
      }),
      { numRuns: 20_000 },
    );
    const body = 'The quick brown fox jumps over the lazy dog.\r\n'.repeat(200);
    expect(snippetOf(body)).toBe(plainSnippetOf(body));
    expect(snippetOf('> quoted\r\nhello\r\n-- \r\nsig')).toBe('hello');
  });
});
