/**
 * The loop of a worker that claims its work from a table: `step` runs again at once while it
 * finds work; when it finds none, the loop sleeps `intervalMs` (work queued by other processes,
 * retries coming due) or until `kick` (work this process just queued). A kick that arrives while
 * a step runs is not lost: that loop looks again before sleeping. `wakeOn` subscribes the kick
 * to what announces such work while the loop runs. `concurrency` loops run side by side; `stop`
 * waits for the steps in flight.
 *
 * While there is no work, one of the `concurrency` loops looks each `intervalMs` (the watch) and
 * the others wait: an idle worker costs one claim query an interval, not `concurrency` of them,
 * and each is a wake-up of the database and of the process. The moment a look finds work, every
 * waiting loop is woken to claim beside it.
 */
export class PollingLoop {
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly sleepers = new Set<() => void>();
  private kicked = false;
  /** Whether a sleeping loop holds the interval's timer. */
  private watching = false;
  private unsubscribe: (() => void) | undefined;

  constructor(
    /** Claims and processes some work; true when there was any. */
    private readonly step: () => Promise<boolean>,
    private readonly options: {
      intervalMs: number;
      concurrency?: number;
      onError(err: unknown): void;
      /** Subscribes `kick` (returns the unsubscribe), e.g. to the event bus. */
      wakeOn?(kick: () => void): () => void;
    },
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unsubscribe = this.options.wakeOn?.(() => this.kick());
    this.loops = Array.from({ length: this.options.concurrency ?? 1 }, () => this.loop());
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.kick();
    await Promise.all(this.loops);
  }

  /** Looks for work now instead of at the next poll. */
  kick(): void {
    this.kicked = true;
    this.wakeAll();
  }

  private wakeAll(): void {
    for (const wake of this.sleepers) wake();
  }

  private async loop(): Promise<void> {
    while (this.running) {
      this.kicked = false;
      let worked = false;
      try {
        worked = await this.step();
      } catch (err) {
        this.options.onError(err);
      }
      // Work found: more may be waiting, so the idle loops claim beside this one.
      if (worked) this.wakeAll();
      else if (this.running && !this.kicked) await this.sleep();
    }
  }

  /** The first loop to go idle keeps the watch (a timer); the others wait for a wake-up. */
  private sleep(): Promise<void> {
    const watch = !this.watching;
    if (watch) this.watching = true;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (watch) this.watching = false;
        this.sleepers.delete(done);
        resolve();
      };
      const timer = watch ? setTimeout(done, this.options.intervalMs) : undefined;
      this.sleepers.add(done);
    });
  }
}
