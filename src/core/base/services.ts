import type { Redis } from 'ioredis';
import type { Config } from '../../config/config.js';
import type { Database } from '../../storage/database.js';
import type { BlobStore } from '../../storage/blobs/blob-store.js';
import type { EventBus } from '../../storage/event-bus.js';
import type { FairGate } from '../../storage/fair-gate.js';
import type { Logger } from './logger.js';
import type { Clock } from './time.js';
import type { CursorCodec } from './paging/cursor.js';
import type { RateLimits } from './ratelimit/rate-limits.js';
import type { ConcurrencyCap } from './ratelimit/concurrency-cap.js';

/** The base floor's share of `Services`: the handles every floor works with, and shared bounds. */
export interface BaseServices {
  config: Readonly<Config>;
  log: Logger;
  clock: Clock;
  db: Database;
  blobs: BlobStore;
  bus: EventBus;
  redis: Redis | null;
  cursors: CursorCodec;
  limits: RateLimits;
  /** Per-token bounds on what every tenant shares (docs/api.md, "Per-token bounds"). */
  caps: { sockets: ConcurrencyCap; replays: ConcurrencyCap; eventStreams: ConcurrencyCap };
  /** Replay pages of the real-time connection queue here (width: a quarter of the database pool). */
  replayGate: FairGate;
}
