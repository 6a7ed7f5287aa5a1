import type { Database } from '../../storage/database.js';
import type { EventBus } from '../events/event-bus.js';
import type { CursorCodec } from '../paging/cursor.js';
import type { Clock } from '../time.js';

/** Read side of messages: list, get, thread, read state, soft delete. (Being built.) */
export class MessageService {
  constructor(
    protected readonly db: Database,
    protected readonly bus: EventBus,
    protected readonly cursors: CursorCodec,
    protected readonly clock: Clock,
  ) {}
}
