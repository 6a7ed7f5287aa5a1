import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ExtractAnswer, ExtractJob } from './text-extractor.js';
import type { ZipLimits } from './docx-zip.js';

export type TextKind = 'pdf' | 'docx' | 'html' | 'text';

export interface TextLimits {
  /** Wall-clock limit of one extraction; the process is killed past it. */
  timeoutMs: number;
  /** Characters returned at most (the rest is cut, `truncated: true`). */
  maxChars: number;
  /** PDFs with more pages are refused before any page is read. */
  maxPages: number;
  /** Resident memory of one extractor process, MiB: heap, ArrayBuffers and code alike. */
  maxMemoryMb: number;
  /** Zip entries of a DOCX (docx-zip.ts). */
  zip: ZipLimits;
}

export type TextOutcome = (
  { ok: true; text: string; truncated: boolean } | { ok: false; reason: string; detail: string }
) & {
  /** The extractor's highest resident memory the watchdog saw, MiB (0 without /proc). */
  peakMb?: number;
};

// dist/ runs the compiled .js; tests run the sources, which Node loads by stripping types.
const EXTRACTOR = new URL(
  import.meta.url.endsWith('.ts') ? './text-extractor.ts' : './text-extractor.js',
  import.meta.url,
);
/** How often the watchdog reads the extractor's resident memory. */
const WATCH_MS = 20;
const PAGE_BYTES = 4096;

/** Resident bytes of a process (Linux /proc), or null where there is no /proc. */
function residentBytes(pid: number): number | null {
  try {
    return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE_BYTES;
  } catch {
    return null;
  }
}

/**
 * Extracts text in a fresh process per job (child_process.fork), so everything a parser allocates
 * is that process's, never the API's: its V8 heap is capped by --max-old-space-size, its whole
 * resident memory (ArrayBuffers included, which no heap limit counts) by a watchdog that kills it
 * past `maxMemoryMb`, and its time by `timeoutMs`. It inherits no environment (no secrets).
 */
export class TextRunner {
  private readonly children = new Set<ReturnType<typeof fork>>();
  private closing = false;

  constructor(private readonly limits: TextLimits) {}

  extract(kind: Exclude<TextKind, 'text'>, bytes: Uint8Array): Promise<TextOutcome> {
    if (this.closing) return Promise.resolve({ ok: false, reason: 'shutdown', detail: 'the server is shutting down' });
    const { timeoutMs, maxChars, maxPages, maxMemoryMb, zip } = this.limits;
    // The heap gets most of the budget; code, stacks and buffers the rest (the watchdog is the bound).
    const heapMb = Math.max(32, Math.floor(maxMemoryMb * 0.75));
    const child = fork(EXTRACTOR, [], {
      execArgv: [`--max-old-space-size=${heapMb}`, '--max-semi-space-size=4', '--stack-size=2048'],
      env: {},
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    this.children.add(child);
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-2000)));
    return new Promise((resolve) => {
      let settled = false;
      let killedFor: TextOutcome | null = null;
      let peak = 0;
      const done = (outcome: TextOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearInterval(watchdog);
        this.children.delete(child);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        resolve({ ...outcome, peakMb: Math.round(peak / (1024 * 1024)) });
      };
      const kill = (outcome: TextOutcome) => {
        killedFor ??= outcome;
        child.kill('SIGKILL');
      };
      const timer = setTimeout(
        () => kill({ ok: false, reason: 'timeout', detail: `extraction took longer than ${timeoutMs} ms` }),
        timeoutMs,
      );
      const watchdog = setInterval(() => {
        const rss = child.pid === undefined ? null : residentBytes(child.pid);
        if (rss !== null) peak = Math.max(peak, rss);
        if (rss !== null && rss > maxMemoryMb * 1024 * 1024)
          kill({ ok: false, reason: 'memory', detail: `the extractor used more than ${maxMemoryMb} MiB` });
      }, WATCH_MS);
      // The extractor says 'ready' once it listens, then gets the job, then answers once.
      const job: ExtractJob = { kind, bytes, maxChars, maxPages, zip };
      child.on('message', (m: 'ready' | ExtractAnswer) => {
        if (m === 'ready') child.send(job);
        else done(m.ok ? m : { ok: false, reason: m.reason, detail: m.detail });
      });
      child.once('error', (err) => done({ ok: false, reason: 'crashed', detail: err.message }));
      child.once('exit', (code, signal) => {
        if (killedFor) return done(killedFor);
        if (this.closing) return done({ ok: false, reason: 'shutdown', detail: 'the server is shutting down' });
        if (/heap limit|out of memory/i.test(stderr))
          return done({ ok: false, reason: 'memory', detail: `the extractor's heap passed ${heapMb} MiB` });
        done({ ok: false, reason: 'crashed', detail: `the extractor ended (${signal ?? `exit ${code}`})` });
      });
    });
  }

  /** Kills every extractor still running and starts no more (shutdown): each answers `shutdown`. */
  close(): void {
    this.closing = true;
    for (const child of this.children) child.kill('SIGKILL');
  }
}
