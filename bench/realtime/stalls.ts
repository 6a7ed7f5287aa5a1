import { scrapeMetrics } from '../lib/scrape.js';

// Where a tail can come from inside a process: its event loop held up (the longest delay of a
// 10 ms timer, as prom-client's default metrics measure it) and its garbage collector's pauses.
// The service's processes report both in GET /metrics (prom-client, reset at each scrape); the bare
// servers in GET /stats (ceiling-server.ts, the same measurements). Read once before a measured
// window (which resets the loop's maximum) and once after it.

/** What one process reports: the loop's longest delay since the last read, and GC totals so far. */
export interface Stalls {
  loopMaxMs: number;
  gcMs: number;
  /** Pauses of 10 ms or more by kind (prom-client's names: major, minor, incremental, weakcb). */
  gcLongKinds: Record<string, number>;
}

const PREFIX = 'mailbox_process_nodejs_';

/** The service's figures from its /metrics (prom-client's default metrics under the mailbox_process_ prefix). */
export async function serviceStalls(baseUrl: string): Promise<Stalls> {
  const m = await scrapeMetrics(baseUrl);
  let gcMs = 0;
  const gcLongKinds: Record<string, number> = {};
  for (const [series, value] of m) {
    if (!series.startsWith(`${PREFIX}gc_duration_seconds`)) continue;
    const kind = /kind="(\w+)"/.exec(series)?.[1] ?? 'unknown';
    // Long pauses = all of a kind minus those in the 10 ms bucket.
    if (series.startsWith(`${PREFIX}gc_duration_seconds_count`)) gcLongKinds[kind] = (gcLongKinds[kind] ?? 0) + value;
    else if (series.startsWith(`${PREFIX}gc_duration_seconds_sum`)) gcMs += value * 1000;
    else if (series.includes('le="0.01"')) gcLongKinds[kind] = (gcLongKinds[kind] ?? 0) - value;
  }
  return { loopMaxMs: (m.get(`${PREFIX}eventloop_lag_max_seconds`) ?? NaN) * 1000, gcMs, gcLongKinds };
}

/** A bare server's figures (ceiling-server.ts GET /stats). */
export async function ceilingStalls(baseUrl: string): Promise<Stalls> {
  return (await (await fetch(`${baseUrl}/stats`, { signal: AbortSignal.timeout(10_000) })).json()) as Stalls;
}

/** Per process over a window, from reads before and after it: "loop max ms" and "long GC pauses by kind (GC ms)", each joined by " / ". */
export function describeWindow(before: Stalls[], after: Stalls[]): { loopMax: string; gc: string } {
  return {
    loopMax: after.map((s) => s.loopMaxMs.toFixed(0)).join(' / '),
    gc: after
      .map((s, i) => {
        const long = Object.entries(s.gcLongKinds)
          .map(([kind, n]) => [kind, n - (before[i]!.gcLongKinds[kind] ?? 0)] as const)
          .filter(([, n]) => n > 0)
          .map(([kind, n]) => `${n} ${kind}`);
        return `${long.join(', ') || 0} (${(s.gcMs - before[i]!.gcMs).toFixed(0)})`;
      })
      .join(' / '),
  };
}
