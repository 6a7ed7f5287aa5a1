/**
 * One lane per client address for the token lookups that address causes (docs/api.md,
 * "Authentication throttling"). A lane runs at most one query at a time, for up to `maxBatch`
 * distinct token hashes (`where token_hash = any(…)`, a unique-index probe each); hashes that
 * arrive meanwhile wait for the next query. Once the address is past its failure budget, its
 * queries are spaced `throttledIntervalMs` apart. So however fast an address sends well-formed
 * tokens, it costs at most one query in flight, and past the budget at most
 * 1000 / throttledIntervalMs queries a second, while every token it sends is still looked up:
 * a valid one always passes, only later.
 */
export class TokenLookupLanes<Row> {
  private readonly lanes = new Map<string, Lane<Row>>();
  /** Queries run since start (all lanes): what reliability figures report as database work. */
  queries = 0;

  constructor(
    private readonly lookup: (hashes: string[]) => Promise<Map<string, Row>>,
    private readonly options: { maxBatch: number; throttledIntervalMs: number },
  ) {}

  /** The row of `hash`, or undefined when no token has it, through the lane of `key`. */
  find(key: string, hash: string, throttled: boolean): Promise<Row | undefined> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { waiting: new Map(), running: false, lastRunAt: 0, throttled };
      this.lanes.set(key, lane);
    }
    lane.throttled = throttled;
    const current = lane;
    return new Promise<Row | undefined>((resolve, reject) => {
      const waiters = current.waiting.get(hash);
      if (waiters) waiters.push({ resolve, reject });
      else current.waiting.set(hash, [{ resolve, reject }]);
      if (!current.running) this.schedule(key, current);
    });
  }

  private schedule(key: string, lane: Lane<Row>): void {
    lane.running = true;
    const wait = lane.throttled ? Math.max(0, lane.lastRunAt + this.options.throttledIntervalMs - Date.now()) : 0;
    const run = () => void this.run(key, lane);
    if (wait > 0) setTimeout(run, wait).unref?.();
    else queueMicrotask(run);
  }

  private async run(key: string, lane: Lane<Row>): Promise<void> {
    const batch = [...lane.waiting.keys()].slice(0, this.options.maxBatch);
    const waiters = batch.map((h) => lane.waiting.get(h)!);
    for (const h of batch) lane.waiting.delete(h);
    lane.lastRunAt = Date.now();
    this.queries++;
    try {
      const rows = await this.lookup(batch);
      batch.forEach((h, i) => waiters[i]!.forEach((w) => w.resolve(rows.get(h))));
    } catch (err) {
      waiters.forEach((ws) => ws.forEach((w) => w.reject(err)));
    }
    if (lane.waiting.size > 0) this.schedule(key, lane);
    else {
      lane.running = false;
      this.lanes.delete(key);
    }
  }
}

interface Lane<Row> {
  waiting: Map<string, { resolve: (row: Row | undefined) => void; reject: (err: unknown) => void }[]>;
  running: boolean;
  lastRunAt: number;
  throttled: boolean;
}
