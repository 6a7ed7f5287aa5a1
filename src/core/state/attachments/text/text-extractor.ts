/**
 * The extractor process (child_process.fork from text-runner.ts), never the API's own process:
 * parsing a hostile PDF, DOCX or HTML file can take unbounded CPU and memory, and memory a parser
 * allocates outside V8's heap (inflated ArrayBuffers) is bounded only per process. The parent
 * caps this process's heap (--max-old-space-size), its resident memory (a watchdog) and its time,
 * and kills it past any of them (docs/attachment-extraction.md). Self-contained on purpose: it
 * imports only libraries and its sibling docx-zip, so it loads the same from dist/ and the sources.
 */
import { writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { ZipLimits } from './docx-zip.js';

export interface ExtractJob {
  kind: 'pdf' | 'docx' | 'html';
  bytes: Uint8Array;
  maxChars: number;
  maxPages: number;
  zip: ZipLimits;
}

export type ExtractAnswer =
  { ok: true; text: string; truncated: boolean } | { ok: false; reason: string; detail: string };

const sibling = (name: string) =>
  new URL(import.meta.url.endsWith('.ts') ? `./${name}.ts` : `./${name}.js`, import.meta.url).href;

async function pdfText(job: ExtractJob): Promise<{ text: string; truncated: boolean }> {
  const { getDocumentProxy } = await import('unpdf');
  // pdf.js refuses a Buffer (what the IPC channel delivers); a view of the same bytes is enough.
  const data = new Uint8Array(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  const pdf = await getDocumentProxy(data, { disableFontFace: true });
  if (pdf.numPages > job.maxPages)
    throw Object.assign(new Error(`the PDF has ${pdf.numPages} pages (at most ${job.maxPages})`), {
      reason: 'too-many-pages',
    });
  let text = '';
  // Page by page, item by item, stopping at the output cap: a long document costs only what is returned.
  for (let i = 1; i <= pdf.numPages; i++) {
    const reader = (await pdf.getPage(i)).streamTextContent().getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const item of (value as { items: { str?: string; hasEOL?: boolean }[] }).items)
        text += (item.str ?? '') + (item.hasEOL ? '\n' : '');
      if (text.length > job.maxChars) {
        await reader.cancel();
        return { text: text.slice(0, job.maxChars), truncated: true };
      }
    }
    text += '\n\n';
  }
  return { text, truncated: false };
}

async function docxText(job: ExtractJob): Promise<string> {
  const { checkedDocx } = (await import(sibling('docx-zip'))) as typeof import('./docx-zip.js');
  const checked = await checkedDocx(job.bytes, job.zip);
  const mammoth = (await import('mammoth')).default;
  return (await mammoth.extractRawText({ buffer: Buffer.from(checked) })).value;
}

async function htmlText(job: ExtractJob): Promise<string> {
  const { convert } = await import('html-to-text');
  return convert(new TextDecoder().decode(job.bytes), {
    wordwrap: false,
    // Deep or wide trees cost recursion and time; past these the rest is dropped, not parsed.
    limits: { maxDepth: 256, maxChildNodes: 100_000, maxInputLength: job.bytes.length },
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
    ],
  });
}

async function run(job: ExtractJob): Promise<ExtractAnswer> {
  try {
    if (job.kind === 'pdf') return { ok: true, ...(await pdfText(job)) };
    const text = job.kind === 'docx' ? await docxText(job) : await htmlText(job);
    return { ok: true, text: text.slice(0, job.maxChars), truncated: text.length > job.maxChars };
  } catch (err) {
    const reason = (err as { reason?: unknown }).reason;
    return {
      ok: false,
      reason: typeof reason === 'string' ? reason : 'unreadable',
      detail: err instanceof Error ? err.message : String(err),
    };
  }
}

// Under memory pressure the kernel kills the extractor, not the API beside it (raising one's own
// score needs no privilege; Linux only).
try {
  writeFileSync('/proc/self/oom_score_adj', '1000');
} catch {
  // not Linux, or /proc read-only: the watchdog in the parent still holds
}
// The parent gone (killed, crashed): stop at once instead of parsing for nobody, unwatched. The
// main thread may be stuck in a parser for seconds, so a guard thread checks and kills the process.
process.once('disconnect', () => process.exit(1));
new Worker(
  `const { workerData } = require('node:worker_threads');
  setInterval(() => { if (process.ppid !== workerData.ppid) process.kill(process.pid, 'SIGKILL'); }, 200);`,
  { eval: true, workerData: { ppid: process.ppid }, resourceLimits: { maxOldGenerationSizeMb: 8 } },
).unref();
process.once('message', (job: ExtractJob) => {
  void run(job).then((answer) => process.send!(answer, () => process.exit(0)));
});
process.send!('ready');
