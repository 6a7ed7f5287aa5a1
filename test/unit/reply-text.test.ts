import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { packageStringReverse, reverseCodeUnits } from '../../src/core/state/extraction/reply-text.js';

// src/core/state/extraction/reply-text.ts replaces email-reply-parser's character-by-character reverse
// with a Buffer one; it must return exactly what the package's own did, for any text.
const DIR = path.resolve(import.meta.dirname, '../fixtures/replies');

describe("email-reply-parser's reverse, replaced", () => {
  it('the package still has the method we replace (else the speed-up silently stopped)', () => {
    expect(packageStringReverse).toBeTypeOf('function');
  });

  it('returns what the package returns: every reply fixture, astral and combining characters, odd lengths, empty', () => {
    const samples = [
      '',
      'a',
      'ab\r\nc',
      'Grüße 😀 from 東京 — e\u0301\n> quoted',
      '\ud83d', // a lone surrogate
      ...readdirSync(DIR)
        .filter((f) => f.endsWith('.txt'))
        .map((f) => readFileSync(path.join(DIR, f), 'utf8')),
    ];
    for (const s of samples) expect(reverseCodeUnits(s)).toBe(packageStringReverse!.call(null, s));
  });
});
