/**
 * A worker's background pass over waiting rows: every `intervalMs`, `step` runs again while it
 * returns a full `batch` (more may be waiting), never two passes at once; `stop` waits for the
 * running one. Several workers may run the same pass when `step` skips rows others hold.
 */
export function startBatchedPass(
  step: () => Promise<number>,
  options: { batch: number; intervalMs: number; onDone(total: number): void; onError(err: unknown): void },
): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  let stopped = false;
  const pass = async () => {
    let total = 0;
    for (let n = options.batch; n === options.batch && !stopped;) {
      n = await step();
      total += n;
    }
    if (total > 0) options.onDone(total);
  };
  const timer = setInterval(() => {
    if (running) return;
    running = pass()
      .catch(options.onError)
      .finally(() => {
        running = null;
      });
  }, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
