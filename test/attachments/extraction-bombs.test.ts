import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, type TestServer } from '../support/harness.js';
import { twoTenants, type Tenants } from '../support/seed-messages.js';
import { seedAttachment } from '../support/seed-attachment.js';
import { contentBombPdf } from '../support/hostile-pdf.js';
import { docxBomb, plainDocx } from '../support/docx-bomb.js';
import { extractorPids } from '../support/processes.js';
import { rowsOf } from '../delivery/helpers.js';

// Decompression bombs against attachment text (docs/attachment-extraction.md), on the engine the
// run selects: a DOCX whose document.xml inflates to 1.5 GB, one that lies about its inflated size,
// a PDF whose content stream inflates to 96 MiB and HTML that parses for ever. Each answers 422
// with its recorded reason while this process (the server) stays small, because the parsing runs
// in an extractor process; a claim left by a dead extraction is recorded failed, never re-run; and
// one tenant's queue of slow files does not hold another tenant's file behind it.

const TIMEOUT_MS = 8_000;
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/attachments');
/** What one bomb may add to this process's resident memory (the old in-thread extraction: GBs). */
const SERVER_GROWTH_LIMIT_MB = 150;

let server: TestServer;
let t: Tenants;
const q = rowsOf(() => server);

beforeAll(async () => {
  server = await startTestServer({
    env: { ATTACHMENT_TEXT_TIMEOUT: `${TIMEOUT_MS}ms`, ATTACHMENT_TEXT_MAX_CHARS: '5000' },
  });
  t = await twoTenants(server);
});
afterAll(async () => {
  await server?.close();
});

type Seeded = { messageId: string; attachmentId: string };
const textOf = (m: Seeded, token = t.a1.token) =>
  server.api(token).get(`/api/messages/${m.messageId}/attachments/${m.attachmentId}/text`);
const seed = (filename: string, contentType: string, bytes: Buffer, mailbox: { mailboxId: string } = t.a1) =>
  seedAttachment(server, mailbox, { filename, contentType, bytes });
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const reasonOf = async (m: Seeded) =>
  (await q`select status, failure_reason from attachment_text where attachment_id = ${m.attachmentId}`)[0];
/** An HTML file html-to-text parses for far longer than any time limit. */
// 400 000 levels: one run saw 100 000 parsed within the 8 s limit (200 instead of 422).
const slowHtml = () => Buffer.from('<div>'.repeat(400_000) + 'x' + '</div>'.repeat(400_000));

/** Runs `work` while sampling this process's RSS every 20 ms; the growth over the start, MB. */
async function rssGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growthMb: number }> {
  const start = process.memoryUsage.rss();
  let peak = start;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  try {
    const result = await work();
    return { result, growthMb: Math.round((peak - start) / (1024 * 1024)) };
  } finally {
    clearInterval(timer);
  }
}

describe('decompression bombs', () => {
  it('a DOCX inflating to 1.5 GB: 422 too-large-inflated, the server stays small and answers', async () => {
    const bomb = docxBomb(1_500_000_000);
    expect(bomb.length).toBeLessThan(10 * 1024 * 1024);
    const m = await seed('bomb.docx', DOCX, bomb);
    const { result, growthMb } = await rssGrowth(() => textOf(m));
    expect(result.status, JSON.stringify(result.body)).toBe(422);
    expect(result.body.errorCode).toBe('ATTACHMENT_TEXT_FAILED');
    expect(result.body.errMsg).toMatch(/\(too-large-inflated\): word\/document\.xml declares 1500000\d+ bytes/);
    expect(growthMb).toBeLessThan(SERVER_GROWTH_LIMIT_MB);
    expect(await reasonOf(m)).toEqual({ status: 'failed', failure_reason: 'too-large-inflated' });
    expect((await server.api(t.a1.token).get('/api/messages?limit=1')).status).toBe(200);
  });

  it('a DOCX that declares 1 000 bytes and inflates to 200 MB is stopped while inflating', async () => {
    const m = await seed('liar.docx', DOCX, docxBomb(200_000_000, { lie: true }));
    const { result, growthMb } = await rssGrowth(() => textOf(m));
    expect(result.status).toBe(422);
    expect(result.body.errMsg).toMatch(
      /\(too-large-inflated\): word\/document\.xml inflates past its declared 1000 bytes/,
    );
    expect(growthMb).toBeLessThan(SERVER_GROWTH_LIMIT_MB);
  });

  it('a DOCX under the size cap but compressed past the ratio cap is refused', async () => {
    const m = await seed('ratio.docx', DOCX, docxBomb(20_000_000));
    const res = await textOf(m);
    expect(res.status).toBe(422);
    expect(res.body.errMsg).toMatch(/\(compression-ratio\): word\/document\.xml inflates \d+× \(at most 200×\)/);
  });

  it('ordinary DOCX files still read, the checked zip and the real fixture alike', async () => {
    const made = await seed('made.docx', DOCX, plainDocx(['First paragraph.', 'Second one.']));
    expect((await textOf(made)).body.data.text).toMatch(/First paragraph\.\s+Second one\./);
    const real = await seed('notes.docx', DOCX, readFileSync(path.join(FIXTURES, 'notes.docx')));
    expect((await textOf(real)).body.data.text).toContain('The launch moves to April 14.');
  });

  it('a PDF inflating to 96 MiB: the extractor is killed at its memory cap, not the server', async () => {
    const m = await seed('bomb.pdf', 'application/pdf', contentBombPdf());
    const { result, growthMb } = await rssGrowth(() => textOf(m));
    expect(result.status).toBe(422);
    expect(result.body.errMsg).toMatch(/\(memory\): the extractor used more than 192 MiB/);
    expect(growthMb).toBeLessThan(SERVER_GROWTH_LIMIT_MB);
    expect(await reasonOf(m)).toEqual({ status: 'failed', failure_reason: 'memory' });
  });

  it('HTML: endless parsing stops at the time limit, long text at the output cap', async () => {
    const slow = await seed('slow.html', 'text/html', slowHtml());
    const started = performance.now();
    const res = await textOf(slow);
    expect(res.status).toBe(422);
    expect(res.body.errMsg).toMatch(/\(timeout\): extraction took longer than 8000 ms/);
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + 5_000);
    const long = await seed('long.html', 'text/html', Buffer.from(`<p>${'word '.repeat(600_000)}</p>`));
    const cut = await textOf(long);
    expect(cut.body.data).toMatchObject({ kind: 'html', truncated: true });
    expect(cut.body.data.text).toHaveLength(5000);
  });
});

describe('a crash poisons only that attachment', () => {
  it('the extractor killed mid-way: 422 crashed, and the next read answers from the record without a new extractor', async () => {
    const m = await seed('killed.html', 'text/html', slowHtml());
    const answer = textOf(m);
    let pids: number[] = [];
    for (let i = 0; i < 200 && pids.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
      pids = extractorPids();
    }
    expect(pids).toHaveLength(1);
    // The claim is durable before the extractor runs: a server dying now leaves this row behind.
    expect(await reasonOf(m)).toEqual({ status: 'extracting', failure_reason: null });
    process.kill(pids[0]!, 'SIGKILL');
    const res = await answer;
    expect(res.status).toBe(422);
    expect(res.body.errMsg).toMatch(/\(crashed\): the extractor ended \(SIGKILL\)/);
    const again = textOf(m);
    await new Promise((r) => setTimeout(r, 100));
    expect(extractorPids()).toEqual([]);
    expect((await again).status).toBe(422);
    expect(await reasonOf(m)).toEqual({ status: 'failed', failure_reason: 'crashed' });
  });

  it('a claim a dead server left behind: recorded failed (interrupted) once its deadline passes, never re-run', async () => {
    const expired = await seed('expired.docx', DOCX, plainDocx(['never read']));
    const live = await seed('live.docx', DOCX, plainDocx(['never read either']));
    const now = Date.now();
    await q`insert into attachment_text (attachment_id, status, created_at, deadline_at)
      values (${expired.attachmentId}, 'extracting', ${new Date(now - 60_000)}, ${new Date(now - 1_000)})`;
    await q`insert into attachment_text (attachment_id, status, created_at, deadline_at)
      values (${live.attachmentId}, 'extracting', ${new Date(now)}, ${new Date(now + 2_000)})`;
    const first = await textOf(expired);
    expect(first.status).toBe(422);
    expect(first.body.errMsg).toMatch(/\(interrupted\): the extraction ended without a result/);
    // A claim still within its deadline is someone's extraction in progress: the read waits for it.
    const started = performance.now();
    const waited = await textOf(live);
    expect(performance.now() - started).toBeGreaterThan(1_500);
    expect(waited.body.errMsg).toMatch(/\(interrupted\)/);
    expect(await reasonOf(live)).toEqual({ status: 'failed', failure_reason: 'interrupted' });
  });
});

describe('fairness between tenants', () => {
  it("one tenant's queue of slow files does not hold another tenant's file behind it", async () => {
    const slow: Seeded[] = [];
    for (let i = 0; i < 4; i++) slow.push(await seed(`slow-${i}.html`, 'text/html', slowHtml()));
    const other = await seed('quick.html', 'text/html', Buffer.from('<p>tenant B</p>'), t.b1);
    const order: string[] = [];
    const reads = slow.map((m, i) =>
      textOf(m).then((res) => {
        order.push(`a${i}`);
        return res.status;
      }),
    );
    // Tenant A's four are in (two running, two waiting) before tenant B asks.
    const { attachmentText } = server.runtime.services;
    while (attachmentText.load.waiting < 2) await new Promise((r) => setTimeout(r, 20));
    const quick = await textOf(other, t.b1.token).then((res) => {
      order.push('b');
      return res;
    });
    expect(quick.status).toBe(200);
    expect(quick.body.data.text).toMatch(/tenant B/);
    // Round robin: B's turn is the second to come, when A's running two have ended (A's third
    // started at the first and takes a whole time limit). In one FIFO B waited for all four of A's.
    expect(order.indexOf('b')).toBeLessThanOrEqual(2);
    // A's last files have nothing left to show: their extractors are killed instead of waited for
    // (a time limit each), and those reads answer 422 (crashed) as the others did (timeout).
    let settled = false;
    const all = Promise.all(reads).finally(() => (settled = true));
    while (!settled) {
      for (const pid of extractorPids()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // ended meanwhile
        }
      }
      await Promise.race([all, new Promise((r) => setTimeout(r, 100))]);
    }
    expect(await all).toEqual(Array(4).fill(422));
  }, 120_000);
});

// Last: it stops this server's extractors for good.
describe('shutdown', () => {
  it('gives the claims of extractions still running back instead of recording their files failed', async () => {
    const m = await seed('draining.html', 'text/html', slowHtml());
    const answer = textOf(m);
    while (extractorPids().length === 0) await new Promise((r) => setTimeout(r, 25));
    await server.runtime.services.attachmentText.close();
    const res = await answer;
    expect(res.status).toBe(503);
    expect(res.body.errMsg).toMatch(/shutting down/);
    expect(await reasonOf(m)).toBeUndefined();
    expect(extractorPids()).toEqual([]);
  });
});
