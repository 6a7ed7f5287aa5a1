import { beforeAll, describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { Extracted } from '../../src/core/state/extraction/extract.js';
import {
  EXTRACTION_DIR,
  extractCorpus,
  scoreCodes,
  scoreLinks,
  type CodeExpectations,
} from '../../bench/extraction/corpus.js';

// The extraction corpus: real .eml files (OTP mails in the formats of common services, several
// languages, HTML-only, and mails full of numbers that are not codes) parsed the way the MX port
// parses them, then extracted. Precision and recall of codes are printed and held to a floor; the
// same scorer prints them in `make bench` (bench/extraction).
const DIR = EXTRACTION_DIR(path.resolve(import.meta.dirname, '../..'));

let expected: CodeExpectations;
let results: Map<string, Extracted>;

beforeAll(async () => {
  ({ expected, results } = await extractCorpus(DIR));
});

describe('one-time code extraction on the fixture corpus', () => {
  it('has at least 40 fixtures, each listed in expected.json', () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith('.eml'));
    expect(files.length).toBeGreaterThanOrEqual(40);
    expect(files.sort()).toEqual(Object.keys(expected).sort());
  });

  it('reaches precision and recall of at least 0.95 (printed)', () => {
    const { precision, recall, tp, fp, fn, misses } = scoreCodes(expected, results);
    console.log(
      `[extraction] codes over ${Object.keys(expected).length} mails: precision ${precision.toFixed(3)}, ` +
        `recall ${recall.toFixed(3)} (tp ${tp}, fp ${fp}, fn ${fn})${misses.length ? `\n  ${misses.join('\n  ')}` : ''}`,
    );
    expect(precision).toBeGreaterThanOrEqual(0.95);
    expect(recall).toBeGreaterThanOrEqual(0.95);
  });

  it('classifies links: List-Unsubscribe and unsubscribe links, verification links, others', () => {
    const { listed, misses } = scoreLinks(expected, results);
    expect(listed).toBeGreaterThan(0);
    expect(misses).toEqual([]);
  });

  it('never reports a link of an image or a URL cut by sentence punctuation', () => {
    for (const [file, r] of results) {
      for (const l of r.links) {
        expect(l.url, file).not.toMatch(/[.,;)]$/);
        expect(['verification', 'unsubscribe', 'other'], file).toContain(l.kind);
      }
    }
  });
});

describe('one-time codes beside addresses', () => {
  it('never takes the digits of an address for a code, wherever the address sits in its word', async () => {
    const { findOneTimeCodes } = await import('../../src/core/state/extraction/one-time-codes.js');
    const body = [
      'Write to agent482913@example.com if this was not you.',
      'Forwarded by <billing-771204@mail.example.org>: your verification code is 305118.',
      // A long word before the code: the address pattern is tried at word starts only (linear).
      `${'x'.repeat(20_000)} token: 662019 is your code`,
    ].join('\n');
    expect(findOneTimeCodes('Your verification code', body)).toEqual(['305118', '662019']);
  });
});
