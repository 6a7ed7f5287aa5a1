import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { replyTextOf } from '../../src/core/state/extraction/reply-text.js';
import { REPLY_SEPARATOR as SEPARATOR, scoreReplies } from '../../bench/extraction/corpus.js';

// Quote stripping measured on a corpus of replies as common clients write them (Gmail, Outlook,
// Apple Mail, iPhone, localized "wrote:" lines, signatures). Each file: the reply body, a line
// "=== expected reply ===", then the new text alone.
const DIR = path.resolve(import.meta.dirname, '../fixtures/replies');

describe('replyText on the reply corpus', () => {
  it('strips quoted history exactly in at least 0.90 of the replies (printed)', () => {
    const { replies, share, wrong } = scoreReplies(DIR);
    expect(replies).toBeGreaterThanOrEqual(15);
    console.log(
      `[extraction] replyText exact on ${replies} replies: ${share.toFixed(3)}` +
        (wrong.length ? `\n  ${wrong.join('\n  ')}` : ''),
    );
    expect(share).toBeGreaterThanOrEqual(0.9);
  });

  it('never keeps a quoted "> " line', () => {
    for (const file of readdirSync(DIR).filter((f) => f.endsWith('.txt'))) {
      const [input] = readFileSync(path.join(DIR, file), 'utf8').split(SEPARATOR);
      expect(replyTextOf(input!), file).not.toMatch(/^>/m);
    }
  });
});
