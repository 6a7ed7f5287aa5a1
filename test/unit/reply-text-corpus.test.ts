import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { replyTextOf } from '../../src/core/extraction/reply-text.js';

// Quote stripping measured on a corpus of replies as common clients write them (Gmail, Outlook,
// Apple Mail, iPhone, localized "wrote:" lines, signatures). Each file: the reply body, a line
// "=== expected reply ===", then the new text alone.
const DIR = path.resolve(import.meta.dirname, '../fixtures/replies');
const SEPARATOR = '\n=== expected reply ===\n';
const normalize = (s: string) => s.replace(/[ \t]+\n/g, '\n').trim();

describe('replyText on the reply corpus', () => {
  it('strips quoted history exactly in at least 0.90 of the replies (printed)', () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith('.txt'));
    expect(files.length).toBeGreaterThanOrEqual(15);
    const wrong: string[] = [];
    for (const file of files) {
      const [input, want] = readFileSync(path.join(DIR, file), 'utf8').split(SEPARATOR);
      const got = normalize(replyTextOf(input!));
      if (got !== normalize(want!)) wrong.push(`${file}: got ${JSON.stringify(got)}`);
    }
    const exact = (files.length - wrong.length) / files.length;
    console.log(
      `[extraction] replyText exact on ${files.length} replies: ${exact.toFixed(3)}` +
        (wrong.length ? `\n  ${wrong.join('\n  ')}` : ''),
    );
    expect(exact).toBeGreaterThanOrEqual(0.9);
  });

  it('never keeps a quoted "> " line', () => {
    for (const file of readdirSync(DIR).filter((f) => f.endsWith('.txt'))) {
      const [input] = readFileSync(path.join(DIR, file), 'utf8').split(SEPARATOR);
      expect(replyTextOf(input!), file).not.toMatch(/^>/m);
    }
  });
});
