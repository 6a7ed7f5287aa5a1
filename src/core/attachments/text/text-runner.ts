import { Worker } from 'node:worker_threads';

export type TextKind = 'pdf' | 'docx' | 'html' | 'text';

export interface TextLimits {
  /** Wall-clock limit of one extraction; the thread is terminated past it. */
  timeoutMs: number;
  /** Characters returned at most (the rest is cut, `truncated: true`). */
  maxChars: number;
  /** PDFs with more pages are refused before any page is read. */
  maxPages: number;
  /** Heap of the extraction thread, MiB. */
  maxHeapMb: number;
  /** Extractions running at once in this process; more wait their turn. */
  concurrency: number;
}

export type TextOutcome =
  { ok: true; text: string; truncated: boolean } | { ok: false; reason: string; timedOut: boolean };

// dist/ runs the compiled .js; tests run the sources, which Node loads by stripping types.
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './text-worker.ts' : './text-worker.js', import.meta.url);

/**
 * Extracts text in a fresh worker thread per job: a job that exceeds its time is terminated (the
 * event loop of the API never runs the parser), one that exceeds its heap dies alone, and at most
 * `concurrency` run at once so a burst of hostile files cannot take every core.
 */
export class TextRunner {
  private running = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private readonly limits: TextLimits) {}

  async extract(kind: TextKind, bytes: Uint8Array): Promise<TextOutcome> {
    // Plain text is only decoded (linear, bounded by the size cap): no thread needed.
    if (kind === 'text') {
      const text = new TextDecoder().decode(bytes);
      return { ok: true, text: text.slice(0, this.limits.maxChars), truncated: text.length > this.limits.maxChars };
    }
    await this.slot();
    try {
      return await this.once(kind, bytes);
    } finally {
      this.running--;
      this.queue.shift()?.();
    }
  }

  private slot(): Promise<void> {
    if (this.running < this.limits.concurrency) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.queue.push(() => {
        this.running++;
        resolve();
      }),
    );
  }

  private once(kind: TextKind, bytes: Uint8Array): Promise<TextOutcome> {
    const { timeoutMs, maxChars, maxPages, maxHeapMb } = this.limits;
    const worker = new Worker(WORKER_URL, {
      workerData: { kind, bytes, maxChars, maxPages },
      resourceLimits: { maxOldGenerationSizeMb: maxHeapMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
      stdout: true,
      stderr: true,
    });
    return new Promise((resolve) => {
      let settled = false;
      const done = (outcome: TextOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        void worker.terminate();
        resolve(outcome);
      };
      const timer = setTimeout(
        () => done({ ok: false, reason: `extraction took longer than ${timeoutMs} ms`, timedOut: true }),
        timeoutMs,
      );
      worker.once('message', (m: { ok: true; text: string; truncated: boolean } | { ok: false; reason: string }) =>
        done(m.ok ? m : { ok: false, reason: m.reason, timedOut: false }),
      );
      worker.once('error', (err) => done({ ok: false, reason: err.message, timedOut: false }));
      worker.once('exit', (code) =>
        done({ ok: false, reason: `the extraction thread exited (${code})`, timedOut: false }),
      );
    });
  }
}
