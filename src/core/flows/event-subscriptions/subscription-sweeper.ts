import type { Logger } from '../../base/logger.js';
import type { EventSubscriptionService } from './subscription.service.js';

/** Often enough that a lapsed lease or a revoked token stops deliveries within seconds. */
export const SUBSCRIPTION_SWEEP_INTERVAL_MS = 10_000;

/** Runs the subscription sweep periodically (worker role); several workers at once are harmless. */
export function startSubscriptionSweeper(
  subscriptions: EventSubscriptionService,
  log: Logger,
  intervalMs = SUBSCRIPTION_SWEEP_INTERVAL_MS,
): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const tick = () => {
    if (running) return;
    running = subscriptions
      .sweep()
      .then((r) => {
        if (r.removed + r.queued > 0) log.info('event_subscriptions.swept', r);
      })
      .catch((err) => log.warn('event_subscriptions.sweep_failed', { err }))
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
