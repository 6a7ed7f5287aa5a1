import type { Database } from '../../storage/database.js';
import type { EventBus } from '../events/event-bus.js';
import type { RateLimits } from '../ratelimit/rate-limits.js';
import type { Clock } from '../time.js';
import type { Logger } from '../logger.js';

/** Send and reply up to the outbox. (Being built.) */
export class SendService {
  constructor(
    protected readonly db: Database,
    protected readonly bus: EventBus,
    protected readonly limits: RateLimits,
    protected readonly clock: Clock,
    protected readonly log: Logger,
    protected readonly options: { maxRecipients: number },
  ) {}
}
