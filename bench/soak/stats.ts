// Per-window figures of the soak: latency samples, errors and skips per operation class, and one
// resource sample per window (taken at its end).

export const OP_CLASSES = [
  'http.list',
  'http.get',
  'http.send',
  'http.read-state',
  'http.delete',
  'smtp.submit',
  'smtp.inbound',
] as const;
export type OpClass = (typeof OP_CLASSES)[number];
/** Operation classes plus `event`: a real-time event from its `occurredAtTs` to its arrival on a socket. */
export type LatencyClass = OpClass | 'event';
export const LATENCY_CLASSES: readonly LatencyClass[] = [...OP_CLASSES, 'event'];

export interface ClassWindow {
  latencies: number[];
  errors: number;
  skipped: number;
}

/** A process's memory over one window, probed every few seconds: lowest, highest and last value. */
export interface MemoryRange {
  min: number;
  max: number;
  last: number;
}
/** In MB: RSS, V8 heap used, RSS beyond V8's committed heap (native), and V8's external memory (Buffers) within it. */
export const MEMORY_KINDS = ['rssMb', 'heapMb', 'nonHeapMb', 'externalMb'] as const;
export type MemoryKind = (typeof MEMORY_KINDS)[number];
export type MemoryProbe = Record<MemoryKind, number>;

export interface ResourceSample {
  /** Seconds since the load started, at the end of the window. */
  atS: number;
  /** CPU used in the window by each service process, % of one core. */
  processCpuPct: Record<string, number>;
  /** CPU used in the window, % of all cores: the system under test (services, redis, our PostgreSQL backends), the load generator, the whole machine. */
  cpuPct: { sut: number; postgres: number; loadgen: number; machine: number };
  outbox: { due: number; scheduled: number; oldestAgeS: number };
  events: { deliveries: number; duplicates: number; outOfOrder: number; disconnects: number };
  /** Longest delay between an operation's due time and its start (the generator keeping up). */
  maxLagMs: number;
}

export interface Window {
  classes: Record<LatencyClass, ClassWindow>;
  /** Memory probes in the window (MB) by process name. */
  probes: Record<string, Record<MemoryKind, number[]>>;
  resources: ResourceSample | null;
}

const emptyWindow = (): Window => ({
  classes: Object.fromEntries(
    LATENCY_CLASSES.map((c): [LatencyClass, ClassWindow] => [c, { latencies: [], errors: 0, skipped: 0 }]),
  ) as Record<LatencyClass, ClassWindow>,
  probes: {},
  resources: null,
});

const range = (xs: number[]): MemoryRange => {
  const ok = xs.filter(Number.isFinite);
  return ok.length
    ? { min: Math.min(...ok), max: Math.max(...ok), last: ok.at(-1)! }
    : { min: NaN, max: NaN, last: NaN };
};

export class Recorder {
  readonly windows: Window[] = [];
  readonly errorSamples: string[] = [];
  readonly errorCounts = new Map<string, number>();
  lagMs = 0;

  constructor(
    readonly windowMs: number,
    readonly startedAt: number,
  ) {}

  /** The window `at` (performance.now()) falls in; later windows are created on demand. */
  window(at: number): Window {
    return this.windowAt(Math.max(0, Math.floor((at - this.startedAt) / this.windowMs)));
  }

  /** Window `i` by index (a boundary computed as startedAt + i × windowMs can round into window i − 1). */
  windowAt(i: number): Window {
    while (this.windows.length <= i) this.windows.push(emptyWindow());
    return this.windows[i]!;
  }

  ok(cls: LatencyClass, startedAt: number): void {
    this.window(startedAt).classes[cls].latencies.push(performance.now() - startedAt);
  }

  error(cls: LatencyClass, startedAt: number, message: string): void {
    this.window(startedAt).classes[cls].errors++;
    const key = `${cls}: ${message.slice(0, 160)}`;
    this.errorCounts.set(key, (this.errorCounts.get(key) ?? 0) + 1);
    if (this.errorSamples.length < 20)
      this.errorSamples.push(`${((startedAt - this.startedAt) / 1000).toFixed(1)} s ${key}`);
  }

  /** One memory probe of process `name` in window `w`. */
  probe(name: string, w: number, m: MemoryProbe): void {
    const p = (this.windowAt(w).probes[name] ??= { rssMb: [], heapMb: [], nonHeapMb: [], externalMb: [] });
    for (const k of MEMORY_KINDS) p[k].push(m[k]);
  }

  /** The memory ranges of process `name` over window `w`. */
  memory(w: Window, name: string): Record<MemoryKind, MemoryRange> {
    return Object.fromEntries(MEMORY_KINDS.map((k) => [k, range(w.probes[name]?.[k] ?? [])])) as Record<
      MemoryKind,
      MemoryRange
    >;
  }

  skip(cls: LatencyClass, startedAt: number): void {
    this.window(startedAt).classes[cls].skipped++;
  }
}
