import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ALNUM, withoutAddresses } from '../../src/core/state/extraction/one-time-codes.js';

// The extraction's fast forms must find exactly what their plain forms find (one-time-codes.ts):
// the plain patterns are the reference here, run on random text from the characters that matter.
const PLAIN_ALNUM = /(?<![\p{L}\p{N}@#/._-])([A-Z0-9]+(?:-[A-Z0-9]{2,})?)(?![\p{L}\p{N}/_@-])/gu;
const PLAIN_ADDRESSES = /(?<!\S)\S+@\S+\.\S+/g;

const pieces = [...'AZKax079-@.#/_ \n\téЖ١€+\u00a0\u3000😀', 'com'];
const text = fc.array(fc.constantFrom(...pieces), { maxLength: 40 }).map((p) => p.join(''));
const matches = (re: RegExp, s: string) => [...s.matchAll(re)].map((m) => [m.index, m[0], m[1]]);

describe('one-time code patterns', () => {
  it('ALNUM (look-behind after the first character) matches what the plain pattern matches', () => {
    fc.assert(
      fc.property(text, (s) => {
        expect(matches(ALNUM, s)).toEqual(matches(PLAIN_ALNUM, s));
      }),
      { numRuns: 20_000 },
    );
    expect(matches(ALNUM, 'Use A7K-9QX or G-123456, not x/AB12 or AB12a.')).toEqual([
      [4, 'A7K-9QX', 'A7K-9QX'],
      [15, 'G-123456', 'G-123456'],
    ]);
  });

  it('withoutAddresses blanks the words the plain address pattern blanks', () => {
    fc.assert(
      fc.property(text, (s) => {
        expect(withoutAddresses(s)).toBe(s.replace(PLAIN_ADDRESSES, ' '));
      }),
      {
        numRuns: 20_000,
      },
    );
    expect(withoutAddresses('mail a@b.co or\u00a0x@y.z, not @home or a@b')).toBe('mail   or\u00a0  not @home or a@b');
  });
});
