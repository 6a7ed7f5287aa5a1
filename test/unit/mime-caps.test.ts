import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkMimeStructure, MIME_LIMITS } from '../../src/core/state/mail/mime-caps.js';
import { parseMime } from '../../src/core/state/mail/mime-parse.js';
import { topHeaderLines } from '../../src/core/state/mail/raw-headers.js';
import { allFromAddresses } from '../../src/core/state/mail/author-fields.js';
import { FsBlobStore } from '../../src/storage/blobs/fs-blob-store.js';

// Queued intake (docs/api.md) refuses with checkMimeStructure before the 250 and parses behind it
// with parseMime; both must reach the same verdict, or a message would be accepted and then fail,
// or be refused for nothing. Likewise the hosted-From check reads the From fields with
// topHeaderLines where the delivery reads mailparser's headerLines.

const root = mkdtempSync(path.join(tmpdir(), 'mime-caps-'));
const blobs = new FsBlobStore(root);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const verdict = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: { code?: string }) => err.code ?? String(err),
  );

const head = (contentType: string) =>
  `From: "Peer" <peer@sender.example>, other@second.example\r\nTo: a@b.example\r\nSubject: caps\r\nMIME-Version: 1.0\r\nContent-Type: ${contentType}\r\n\r\n`;

function nested(depth: number): string {
  let body = 'leaf\r\n';
  for (let i = depth - 1; i >= 0; i--)
    body = `--n${i}\r\nContent-Type: multipart/mixed; boundary="n${i + 1}"\r\n\r\n${body}--n${i}--\r\n`;
  return head('multipart/mixed; boundary="n0"') + body;
}

function parts(count: number): string {
  const p = Array.from({ length: count }, (_, i) => `--p\r\nContent-Type: text/plain\r\n\r\npart ${i}\r\n`).join('');
  return `${head('multipart/mixed; boundary="p"')}${p}--p--\r\n`;
}

function fatHeaders(perPart: number, count: number): string {
  const p = Array.from(
    { length: count },
    () => `--h\r\nContent-Type: text/plain\r\nX-Fat: ${'f'.repeat(perPart)}\r\n\r\nbody\r\n`,
  ).join('');
  return `${head('multipart/mixed; boundary="h"')}${p}--h--\r\n`;
}

// As port 25 receives them: CRLF line ends (the channel refuses bare LF before the core sees it).
const fixtures = readdirSync('test/fixtures/mime').map((f) => [
  f,
  Buffer.from(readFileSync(path.join('test/fixtures/mime', f), 'latin1').replace(/\r?\n/g, '\r\n'), 'latin1'),
]) as [string, Buffer][];

// Each cap just inside and just past its limit (a node is the message itself, each multipart and each part).
const edges: [string, Buffer][] = [
  [`nesting ${MIME_LIMITS.maxDepth - 1}`, Buffer.from(nested(MIME_LIMITS.maxDepth - 1))],
  [`nesting ${MIME_LIMITS.maxDepth + 1}`, Buffer.from(nested(MIME_LIMITS.maxDepth + 1))],
  ['nesting 200', Buffer.from(nested(200))],
  [`${MIME_LIMITS.maxParts - 2} parts`, Buffer.from(parts(MIME_LIMITS.maxParts - 2))],
  [`${MIME_LIMITS.maxParts + 1} parts`, Buffer.from(parts(MIME_LIMITS.maxParts + 1))],
  ['one part header of 90 KB', Buffer.from(fatHeaders(90 * 1024, 1))],
  ['one part header of 110 KB', Buffer.from(fatHeaders(110 * 1024, 1))],
  ['6 part headers of 90 KB (over 512 KiB in all)', Buffer.from(fatHeaders(90 * 1024, 6))],
  ['5 part headers of 90 KB', Buffer.from(fatHeaders(90 * 1024, 5))],
];

describe('the structure check before the 250 and the parser behind it agree', () => {
  it.each([...fixtures, ...edges])('%s', async (_name, raw) => {
    const parsed = await verdict(parseMime(raw, blobs));
    expect(await verdict(checkMimeStructure(raw))).toBe(parsed);
  });

  it('the edges are on both sides of every cap', async () => {
    const outcomes = await Promise.all(edges.map(([, raw]) => verdict(checkMimeStructure(raw))));
    expect(outcomes).toEqual([
      'ok',
      'MIME_LIMIT',
      'MIME_LIMIT',
      'ok',
      'MIME_LIMIT',
      'ok',
      'MIME_LIMIT',
      'MIME_LIMIT',
      'ok',
    ]);
  });

  it.each(fixtures.concat([['edge', Buffer.from(head('text/plain') + 'x\r\n')]]))(
    '%s: the From addresses read without parsing are those the parser reads',
    async (_name, raw) => {
      const parsed = await parseMime(raw, blobs);
      expect(allFromAddresses(topHeaderLines(raw))).toEqual(allFromAddresses(parsed.headerLines));
    },
  );
});
