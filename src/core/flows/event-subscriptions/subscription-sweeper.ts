import type { Logger } from '../../base/logger.js';
import { PollingLoop } from '../../base/loops/polling-loop.js';
import type { EventSubscriptionService } from './subscription.service.js';

/** Often enough that a lapsed lease or a revoked token stops deliveries within seconds. */
export const SUBSCRIPTION_SWEEP_INTERVAL_MS = 10_000;

/** Runs the subscription sweep periodically (worker role); several workers at once are harmless. */
export function startSubscriptionSweeper(
  subscriptions: EventSubscriptionService,
  log: Logger,
  intervalMs = SUBSCRIPTION_SWEEP_INTERVAL_MS,
): { stop(): Promise<void> } {
  const loop = new PollingLoop(
    async () => {
      const r = await subscriptions.sweep();
      if (r.removed + r.queued > 0) log.info('event_subscriptions.swept', r);
      return false; // one sweep covers every subscription: the next is due an interval later
    },
    { intervalMs, onError: (err) => log.warn('event_subscriptions.sweep_failed', { err }) },
  );
  loop.start();
  return { stop: () => loop.stop() };
}
