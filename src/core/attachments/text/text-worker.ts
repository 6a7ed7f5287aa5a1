/**
 * Runs in a worker thread (node:worker_threads), never on the event loop: parsing a hostile PDF
 * or DOCX can take unbounded CPU and memory, so the parent kills this thread at its time limit
 * and bounds its heap (docs/api.md, "Attachment text"). Self-contained on purpose: it imports
 * only libraries, so it loads the same from dist/ and from the TypeScript sources.
 */
import { parentPort, workerData } from 'node:worker_threads';

interface Job {
  kind: 'pdf' | 'docx' | 'html' | 'text';
  bytes: Uint8Array;
  maxChars: number;
  maxPages: number;
}

type Answer = { ok: true; text: string; truncated: boolean } | { ok: false; reason: string };

async function pdfText(job: Job): Promise<{ text: string; truncated: boolean }> {
  const { getDocumentProxy } = await import('unpdf');
  const pdf = await getDocumentProxy(job.bytes);
  if (pdf.numPages > job.maxPages) throw new Error(`the PDF has ${pdf.numPages} pages (at most ${job.maxPages})`);
  let text = '';
  // Page by page, stopping at the output cap: a long document costs only what is returned.
  for (let i = 1; i <= pdf.numPages; i++) {
    const content = await (await pdf.getPage(i)).getTextContent();
    for (const item of content.items as { str?: string; hasEOL?: boolean }[])
      text += (item.str ?? '') + (item.hasEOL ? '\n' : '');
    text += '\n\n';
    if (text.length > job.maxChars) return { text: text.slice(0, job.maxChars), truncated: true };
  }
  return { text, truncated: false };
}

async function docxText(job: Job): Promise<string> {
  const mammoth = (await import('mammoth')).default;
  return (await mammoth.extractRawText({ buffer: Buffer.from(job.bytes) })).value;
}

async function htmlText(job: Job): Promise<string> {
  const { convert } = await import('html-to-text');
  return convert(new TextDecoder().decode(job.bytes), {
    wordwrap: false,
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
    ],
  });
}

async function run(job: Job): Promise<Answer> {
  try {
    if (job.kind === 'pdf') return { ok: true, ...(await pdfText(job)) };
    const text =
      job.kind === 'docx'
        ? await docxText(job)
        : job.kind === 'html'
          ? await htmlText(job)
          : new TextDecoder().decode(job.bytes);
    return { ok: true, text: text.slice(0, job.maxChars), truncated: text.length > job.maxChars };
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
}

parentPort!.postMessage(await run(workerData as Job));
