import { createReadStream, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FsBlobStore } from '../../src/storage/blobs/fs-blob-store.js';
import { parseMime } from '../../src/core/state/mail/mime-parse.js';
import { extractMessage, type Extracted } from '../../src/core/state/extraction/extract.js';
import { replyTextOf } from '../../src/core/state/extraction/reply-text.js';

// The extraction corpora scored in one place: the unit tests (test/unit/extraction-corpus.test.ts,
// test/unit/reply-text-corpus.test.ts) hold the scores to a floor; `make bench` prints them
// (bench/extraction/run.ts). Fixtures live in test/fixtures/{extraction,replies}.

export type LinkKind = 'verification' | 'unsubscribe' | 'other';
export type CodeExpectations = Record<string, { codes: string[]; links?: Partial<Record<LinkKind, string[]>> }>;

export const EXTRACTION_DIR = (root: string) => path.join(root, 'test/fixtures/extraction');
export const REPLIES_DIR = (root: string) => path.join(root, 'test/fixtures/replies');
export const REPLY_SEPARATOR = '\n=== expected reply ===\n';

/** Every .eml of `dir` listed in its expected.json, parsed as the MX port parses it, then extracted. */
export async function extractCorpus(
  dir: string,
): Promise<{ expected: CodeExpectations; results: Map<string, Extracted> }> {
  const expected = JSON.parse(readFileSync(path.join(dir, 'expected.json'), 'utf8')) as CodeExpectations;
  const blobDir = mkdtempSync(path.join(tmpdir(), 'mbx-extract-'));
  try {
    const blobs = new FsBlobStore(blobDir);
    const results = new Map<string, Extracted>();
    for (const file of Object.keys(expected)) {
      const parsed = await parseMime(createReadStream(path.join(dir, file)), blobs);
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
    return { expected, results };
  } finally {
    rmSync(blobDir, { recursive: true, force: true });
  }
}

export interface CodeScore {
  mails: number;
  tp: number;
  fp: number;
  fn: number;
  precision: number;
  recall: number;
  misses: string[];
}

/** One-time codes: a code counts once per mail; an extra code is a false positive, a missing one a false negative. */
export function scoreCodes(expected: CodeExpectations, results: Map<string, Extracted>): CodeScore {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  const misses: string[] = [];
  for (const [file, want] of Object.entries(expected)) {
    const got = results.get(file)?.codes ?? [];
    for (const c of got)
      if (want.codes.includes(c)) tp++;
      else {
        fp++;
        misses.push(`${file}: extra ${c}`);
      }
    for (const c of want.codes)
      if (!got.includes(c)) {
        fn++;
        misses.push(`${file}: missed ${c}`);
      }
  }
  return {
    mails: Object.keys(expected).length,
    tp,
    fp,
    fn,
    precision: tp + fp === 0 ? 1 : tp / (tp + fp),
    recall: tp + fn === 0 ? 1 : tp / (tp + fn),
    misses,
  };
}

/** Links listed in expected.json found with their kind, of those listed. */
export function scoreLinks(
  expected: CodeExpectations,
  results: Map<string, Extracted>,
): { listed: number; found: number; misses: string[] } {
  let listed = 0;
  let found = 0;
  const misses: string[] = [];
  for (const [file, want] of Object.entries(expected))
    for (const [kind, urls] of Object.entries(want.links ?? {}))
      for (const url of urls ?? []) {
        listed++;
        if (results.get(file)?.links.some((l) => l.url === url && l.kind === kind)) found++;
        else misses.push(`${file}: ${kind} ${url}`);
      }
  return { listed, found, misses };
}

export const normalizeReply = (s: string) => s.replace(/[ \t]+\n/g, '\n').trim();

/** Quote stripping: replies whose replyText equals the expected new text exactly (after trailing blanks). */
export function scoreReplies(dir: string): { replies: number; exact: number; share: number; wrong: string[] } {
  const files = readdirSync(dir).filter((f) => f.endsWith('.txt'));
  const wrong: string[] = [];
  for (const file of files) {
    const [input, want] = readFileSync(path.join(dir, file), 'utf8').split(REPLY_SEPARATOR);
    const got = normalizeReply(replyTextOf(input!));
    if (got !== normalizeReply(want ?? '')) wrong.push(`${file}: got ${JSON.stringify(got)}`);
  }
  const exact = files.length - wrong.length;
  return { replies: files.length, exact, share: files.length ? exact / files.length : 0, wrong };
}
