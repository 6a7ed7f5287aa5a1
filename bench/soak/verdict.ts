import { percentile, table } from '../lib/measure.js';
import { LATENCY_CLASSES, type LatencyClass, type MemoryKind, type Recorder, type Window } from './stats.js';

// The soak's verdict. Windows before `warmupWindows` are left out (JIT, pools, caches, the first
// pages of each mailbox); the rest is cut in thirds, and the last third is compared with the first.

/**
 * Memory is flat when, per process, two figures of the last third are at most 20 MB or 10 % (whichever
 * is larger) above the same figures of the first third, from probes every 5 s:
 * - the RSS peak: the footprint a memory limit must hold. Not a trough or a median: RSS is mostly
 *   V8's heap, which fills with garbage by a hundred MB and more between major GCs and is sometimes
 *   handed back to the system wholesale (measured: an API process at ~435 MB dropping to ~180 MB and
 *   settling at ~285 MB in a 10-minute run), so a low or middle figure says when V8 last let go, not
 *   what the process keeps. The peak only grows when what it keeps grows.
 * - the heap-used trough: the live V8 heap after collection, the floor of the sawtooth, where a
 *   JavaScript leak (a map, listener or closure per request, message or event) shows whatever
 *   V8's sizing does. At the soak's rate, 1 KB retained per operation is tens of MB between thirds.
 * RSS − V8's committed heap and the external (Buffer) memory are printed too, to place a FAIL.
 */
export const MEMORY_GROWTH_MB = 20;
export const MEMORY_GROWTH_RATIO = 0.1;
/** p99 is flat when the last third's p99 of a class is at most 1.5 × the first third's. */
export const P99_GROWTH_RATIO = 1.5;

export interface Check {
  check: string;
  figure: string;
  limit: string;
  pass: boolean;
}

export interface Thirds {
  first: number[];
  last: number[];
}

export function thirds(windows: number, warmupWindows: number): Thirds {
  const size = Math.floor((windows - warmupWindows) / 3);
  if (size < 1)
    throw new Error(`${windows} windows after a warm-up of ${warmupWindows} cannot be cut in thirds: run longer`);
  const range = (from: number) => Array.from({ length: size }, (_, i) => from + i);
  return { first: range(warmupWindows), last: range(windows - size) };
}

const latencies = (ws: Window[], idx: number[], cls: LatencyClass) =>
  idx.flatMap((i) => ws[i]!.classes[cls].latencies).sort((a, b) => a - b);
const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '-');
const signed = (n: number) => `${n >= 0 ? '+' : ''}${fmt(n)}`;

export interface Totals {
  /** Operation errors (non-2xx, SMTP refusals, timeouts) over the whole run, warm-up included. */
  errors: number;
  /** Operations skipped after the warm-up (nothing to work on yet): the stated mix was not run. */
  skippedAfterWarmup: number;
  realtime: {
    connectFailures: number;
    disconnects: number;
    expected: number;
    missed: number;
    duplicates: number;
    outOfOrder: number;
  };
  /** Service log lines at level error (LOG_LEVEL=error, so every line the services wrote). */
  serverErrorLines: number;
  /** Outbox jobs still pending after the drain at the end. */
  undelivered: number;
}

export function verdict(rec: Recorder, t: Thirds, processes: string[], totals: Totals): Check[] {
  const ws = rec.windows;
  const checks: Check[] = [];
  for (const name of processes) {
    const over = (idx: number[], of: MemoryKind, pick: 'min' | 'max') => {
      const xs = idx.map((i) => rec.memory(ws[i]!, name)[of][pick]).filter(Number.isFinite);
      return xs.length ? (pick === 'min' ? Math.min(...xs) : Math.max(...xs)) : NaN;
    };
    const growth = (check: string, of: MemoryKind, pick: 'min' | 'max', extra = '') => {
      const [a, b] = [over(t.first, of, pick), over(t.last, of, pick)];
      const limit = Math.max(MEMORY_GROWTH_MB, a * MEMORY_GROWTH_RATIO);
      checks.push({
        check,
        figure: `${fmt(a)} → ${fmt(b)} MB (${signed(b - a)})${extra}`,
        limit: `≤ +${fmt(limit)} MB`,
        pass: Number.isFinite(a) && Number.isFinite(b) && b - a <= limit,
      });
    };
    const also = (of: MemoryKind, label: string) =>
      `${label} ${fmt(over(t.first, of, 'min'), 0)}–${fmt(over(t.first, of, 'max'), 0)} → ${fmt(over(t.last, of, 'min'), 0)}–${fmt(over(t.last, of, 'max'), 0)}`;
    growth(
      `RSS peak flat: ${name}`,
      'rssMb',
      'max',
      `; RSS trough ${fmt(over(t.first, 'rssMb', 'min'), 0)} → ${fmt(over(t.last, 'rssMb', 'min'), 0)}, ${also('nonHeapMb', 'RSS − V8 heap')}, ${also('externalMb', 'external')}`,
    );
    growth(`live heap flat: ${name} (heap-used trough)`, 'heapMb', 'min');
  }
  for (const cls of LATENCY_CLASSES) {
    const a = latencies(ws, t.first, cls);
    const b = latencies(ws, t.last, cls);
    const [pa, pb] = [percentile(a, 99), percentile(b, 99)];
    checks.push({
      check: `p99 flat: ${cls}`,
      figure: `${fmt(pa)} → ${fmt(pb)} ms (n ${a.length} / ${b.length})`,
      limit: `≤ ${P99_GROWTH_RATIO} × first`,
      // A class that did not run in either third proves nothing: that is a failure, not a pass.
      pass: a.length > 0 && b.length > 0 && pb <= P99_GROWTH_RATIO * pa,
    });
  }
  const zero = (check: string, n: number) => checks.push({ check, figure: String(n), limit: '= 0', pass: n === 0 });
  zero('errors (HTTP + SMTP)', totals.errors);
  zero('operations skipped after warm-up', totals.skippedAfterWarmup);
  zero('server error log lines', totals.serverErrorLines);
  zero('outbox jobs undelivered after drain', totals.undelivered);
  zero('real-time connect failures + disconnects', totals.realtime.connectFailures + totals.realtime.disconnects);
  zero(`real-time missed (of ${totals.realtime.expected} expected deliveries)`, totals.realtime.missed);
  zero('real-time duplicates', totals.realtime.duplicates);
  checks.push({
    check: 'real-time deliveries checked',
    figure: String(totals.realtime.expected),
    limit: '> 0',
    pass: totals.realtime.expected > 0,
  });
  return checks;
}

/** Latency table: p50 / p99 per class per bucket of `per` windows. */
export function latencyTable(ws: Window[], per: number, windowS: number): string {
  const rows: Array<Record<string, string>> = [];
  for (let from = 0; from < ws.length; from += per) {
    const idx = Array.from({ length: Math.min(per, ws.length - from) }, (_, i) => from + i);
    const row: Record<string, string> = {
      min: `${fmt((from * windowS) / 60, 1)}–${fmt(((from + idx.length) * windowS) / 60, 1)}`,
    };
    let ops = 0;
    let errors = 0;
    for (const cls of LATENCY_CLASSES) {
      const l = latencies(ws, idx, cls);
      if (cls !== 'event') ops += l.length;
      errors += idx.reduce((a, i) => a + ws[i]!.classes[cls].errors, 0);
      row[cls] = `${fmt(percentile(l, 50))} / ${fmt(percentile(l, 99))}`;
    }
    row['ops/s'] = fmt(ops / (idx.length * windowS), 1);
    row.errors = String(errors);
    rows.push(row);
  }
  return table(rows);
}

/** Resource table per bucket of `per` windows: RSS and heap used (lowest–highest probe) per process, CPU, event deliveries, outbox. */
export function resourceTable(rec: Recorder, per: number, processes: string[]): string {
  const ws = rec.windows;
  const rows: Array<Record<string, string>> = [];
  for (let from = 0; from < ws.length; from += per) {
    const idx = Array.from({ length: Math.min(per, ws.length - from) }, (_, i) => from + i).filter(
      (i) => ws[i]!.resources,
    );
    const last = ws[idx.at(-1) ?? -1]?.resources;
    if (!last) continue;
    const r = (i: number) => ws[i]!.resources!;
    const avg = (f: (i: number) => number) => idx.reduce((a, i) => a + f(i), 0) / idx.length;
    const sum = (f: (i: number) => number) => idx.reduce((a, i) => a + f(i), 0);
    const row: Record<string, string> = { 'until s': String(Math.round(last.atS)) };
    for (const p of processes) {
      const m = idx.map((i) => rec.memory(ws[i]!, p));
      const lo = (of: MemoryKind) => fmt(Math.min(...m.map((x) => x[of].min)), 0);
      const hi = (of: MemoryKind) => fmt(Math.max(...m.map((x) => x[of].max)), 0);
      row[`${p} RSS / heap MB`] = `${lo('rssMb')}–${hi('rssMb')} / ${lo('heapMb')}–${hi('heapMb')}`;
    }
    row['CPU % SUT (pg)'] = `${fmt(
      avg((i) => r(i).cpuPct.sut),
      0,
    )} (${fmt(
      avg((i) => r(i).cpuPct.postgres),
      0,
    )})`;
    row['CPU % loadgen / machine'] = `${fmt(
      avg((i) => r(i).cpuPct.loadgen),
      0,
    )} / ${fmt(
      avg((i) => r(i).cpuPct.machine),
      0,
    )}`;
    row['events / dup'] = `${sum((i) => r(i).events.deliveries)} / ${sum((i) => r(i).events.duplicates)}`;
    row['outbox due / oldest s'] = `${last.outbox.due} / ${fmt(last.outbox.oldestAgeS, 0)}`;
    rows.push(row);
  }
  return table(rows);
}
