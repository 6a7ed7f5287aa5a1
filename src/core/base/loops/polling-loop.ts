/**
 * The loop of a worker that claims its work from a table: `step` runs again at once while it
 * finds work; when it finds none, the loop sleeps `intervalMs` (work queued by other processes,
 * retries coming due) or until `kick` (work this process just queued). A kick that arrives while
 * a step runs is not lost: that loop looks again before sleeping. `wakeOn` subscribes the kick
 * to what announces such work while the loop runs. `concurrency` loops run side by side; `stop`
 * waits for the steps in flight.
 */
export class PollingLoop {
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly sleepers = new Set<() => void>();
  private kicked = false;
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
      if (!worked && this.running && !this.kicked) await this.sleep();
    }
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, this.options.intervalMs);
      this.sleepers.add(done);
    });
  }
}
