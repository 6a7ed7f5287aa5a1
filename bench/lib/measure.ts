import autocannon from 'autocannon';

export interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  /** Requests answered in the measured run. */
  requests?: number;
  errors: number;
  non2xx: number;
}

/** One autocannon run against a URL; a short warm-up is run first and discarded. */
export async function measure(
  name: string,
  url: string,
  opts: {
    headers?: Record<string, string>;
    connections?: number;
    seconds?: number;
    expect304?: boolean;
    /** Called between the warm-up and the measured run (e.g. to read CPU counters). */
    afterWarmUp?: () => Promise<void>;
  } = {},
): Promise<Figures> {
  const base = { url, headers: opts.headers ?? {}, connections: opts.connections ?? 16 };
  await autocannon({ ...base, duration: 2 });
  await opts.afterWarmUp?.();
  const r = await autocannon({ ...base, duration: opts.seconds ?? 10 });
  return {
    name,
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    errors: r.errors + r.timeouts,
    // A conditional read answered 304 is the success of that row, not an error.
    non2xx: opts.expect304 ? r.non2xx - r['3xx'] + r['2xx'] : r.non2xx,
  };
}

export function table(rows: Array<Record<string, string | number>>): string {
  const cols = Object.keys(rows[0] ?? {});
  const line = (cells: Array<string | number>) => `| ${cells.join(' | ')} |`;
  return [line(cols), line(cols.map(() => '---')), ...rows.map((r) => line(cols.map((c) => r[c] ?? '')))].join('\n');
}

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export const percentile = (sorted: number[], p: number): number =>
  sorted.length ? sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN;
