import type { Database } from '../../storage/database.js';
import type { EventBus } from '../events/event-bus.js';
import type { Clock } from '../time.js';

/** Stores an inbound message into a hosted mailbox, threaded. (Being built.) */
export class InboundStore {
  constructor(protected readonly db: Database, protected readonly bus: EventBus, protected readonly clock: Clock) {}
}
