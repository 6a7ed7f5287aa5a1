import type { Logger } from '../../base/logger.js';
import type { EventService } from './event.service.js';

/** Once a minute is plenty: retention is measured in days or thousands of events. */
export const EVENT_SWEEP_INTERVAL_MS = 60_000;

/**
 * Runs the retention sweep periodically (worker role). Several workers sweeping at once is
 * harmless: the deletes are idempotent and batched.
 */
export function startEventSweeper(
  events: EventService,
  log: Logger,
  intervalMs = EVENT_SWEEP_INTERVAL_MS,
): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const tick = () => {
    if (running) return;
    running = events
      .sweep()
      .then((r) => {
        if (r.byAge + r.byCount > 0) log.info('events.swept', r);
      })
      .catch((err) => log.warn('events.sweep_failed', { err }))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
