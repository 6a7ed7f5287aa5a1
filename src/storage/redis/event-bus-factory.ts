import type { Redis } from 'ioredis';
import { InProcessEventBus, type EventBus } from '../event-bus.js';
import type { StorageLog } from '../storage-log.js';
import { RedisEventBus } from './redis-event-bus.js';

/**
 * The event bus for this process: in process on the embedded default (every role shares one
 * process), Redis pub/sub with REDIS_URL so API, SMTP and worker replicas reach every realtime
 * replica (docs/contract.md, Running it).
 */
export function createEventBus(redis: Redis | null, log?: StorageLog): EventBus {
  return redis ? new RedisEventBus(redis, log) : new InProcessEventBus();
}
