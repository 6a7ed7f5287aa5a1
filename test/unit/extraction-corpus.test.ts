import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReadStream, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FsBlobStore } from '../../src/storage/blobs/fs-blob-store.js';
import { parseMime } from '../../src/core/mail/mime-parse.js';
import { extractMessage, type Extracted } from '../../src/core/extraction/extract.js';

// The extraction corpus: real .eml files (OTP mails in the formats of common services, several
// languages, HTML-only, and mails full of numbers that are not codes) parsed the way the MX port
// parses them, then extracted. Precision and recall of codes are printed and held to a floor.
const DIR = path.resolve(import.meta.dirname, '../fixtures/extraction');
const expected = JSON.parse(readFileSync(path.join(DIR, 'expected.json'), 'utf8')) as Record<
  string,
  { codes: string[]; links?: Partial<Record<'verification' | 'unsubscribe' | 'other', string[]>> }
>;

let blobDir: string;
const results = new Map<string, Extracted>();

beforeAll(async () => {
  blobDir = mkdtempSync(path.join(tmpdir(), 'mbx-extract-'));
  const blobs = new FsBlobStore(blobDir);
  for (const file of Object.keys(expected)) {
    const parsed = await parseMime(createReadStream(path.join(DIR, file)), blobs);
    results.set(
      file,
      extractMessage({
        subject: parsed.subject,
        bodyText: parsed.text,
        bodyHtml: parsed.html,
        listUnsubscribe: parsed.listUnsubscribe,
      }),
    );
  }
});
afterAll(() => rmSync(blobDir, { recursive: true, force: true }));

describe('one-time code extraction on the fixture corpus', () => {
  it('has at least 40 fixtures, each listed in expected.json', () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith('.eml'));
    expect(files.length).toBeGreaterThanOrEqual(40);
    expect(files.sort()).toEqual(Object.keys(expected).sort());
  });

  it('reaches precision and recall of at least 0.95 (printed)', () => {
    let tp = 0;
    let fp = 0;
    let fn = 0;
    const misses: string[] = [];
    for (const [file, want] of Object.entries(expected)) {
      const got = results.get(file)!.codes;
      for (const c of got) {
        if (want.codes.includes(c)) tp++;
        else {
          fp++;
          misses.push(`${file}: extra ${c}`);
        }
      }
      for (const c of want.codes) {
        if (got.includes(c)) continue;
        fn++;
        misses.push(`${file}: missed ${c}`);
      }
    }
    const precision = tp / (tp + fp);
    const recall = tp / (tp + fn);
    console.log(
      `[extraction] codes over ${Object.keys(expected).length} mails: precision ${precision.toFixed(3)}, ` +
        `recall ${recall.toFixed(3)} (tp ${tp}, fp ${fp}, fn ${fn})${misses.length ? `\n  ${misses.join('\n  ')}` : ''}`,
    );
    expect(precision).toBeGreaterThanOrEqual(0.95);
    expect(recall).toBeGreaterThanOrEqual(0.95);
  });

  it('classifies links: List-Unsubscribe and unsubscribe links, verification links, others', () => {
    for (const [file, want] of Object.entries(expected)) {
      if (!want.links) continue;
      const links = results.get(file)!.links;
      for (const [kind, urls] of Object.entries(want.links))
        for (const url of urls!) expect(links, `${file}: ${url}`).toContainEqual({ url, kind });
    }
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
