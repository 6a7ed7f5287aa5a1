import type { Redis } from 'ioredis';
import { InProcessEventBus, type EventBus } from '../../core/events/event-bus.js';

/** The event bus for this process: in process by default, Redis pub/sub with REDIS_URL. (Redis being built.) */
export function createEventBus(_redis: Redis | null): EventBus {
  return new InProcessEventBus();
}
