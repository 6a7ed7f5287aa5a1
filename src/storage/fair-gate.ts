/**
 * At most `width` tasks run at once; the others wait in arrival order (FIFO). Used around each
 * page of a real-time replay (docs/api.md, "Per-token bounds"): a socket with a long backlog
 * queues again after every page, so 300 replays take turns behind each other and leave the rest
 * of the database pool to the API instead of holding every connection at once.
 */
export class FairGate {
  private running = 0;
  private readonly queue: Array<() => void> = [];

  constructor(readonly width: number) {
    if (!Number.isInteger(width) || width < 1) throw new Error('FairGate width must be a positive integer');
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.width) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.running++;
    try {
      return await task();
    } finally {
      const next = this.queue.shift();
      // The slot passes straight to the next waiter, so a newcomer cannot overtake the queue.
      if (next) next();
      else this.running--;
    }
  }

  /** Tasks running and waiting (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.queue.length };
  }
}
