import type { Database, Sql } from '../../../storage/database.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import { AppError } from '../../base/errors.js';
import type { Logger } from '../../base/logger.js';
import { dropQueued, QueueClaimLost } from '../intake/intake-queue.store.js';
import type { IntakeQueue } from '../intake/intake-queue.worker.js';
import type { InboundService } from './inbound.service.js';
import {
  claimInbound,
  releaseReservations,
  withoutDeletedMailboxes,
  type QueuedInbound,
} from './inbound-queue.store.js';

/** Port 25's queue (`inbound_queue`) as the IntakeQueueWorker drives it: rows stored by InboundService. */
export class InboundQueue implements IntakeQueue<QueuedInbound> {
  readonly route = 'inbound';
  readonly table = 'inbound_queue';

  constructor(
    private readonly db: Database,
    private readonly inbound: InboundService,
    private readonly log: Logger,
  ) {}

  claim(lockedBy: string, limit: number, leaseMs: number, now: Date): Promise<QueuedInbound[]> {
    return claimInbound(this.db, lockedBy, limit, leaseMs, now);
  }

  /**
   * A mailbox deleted while the message waited fails the insert of its copy: on such a failure the
   * other recipients get theirs (the deleted one's copy has nowhere to go, as if deleted just after).
   */
  async store(q: QueuedInbound, committed?: Promise<void>): Promise<number> {
    try {
      return (await this.inbound.deliverQueued(q, committed)).messageIds.length;
    } catch (err) {
      if (err instanceof AppError || err instanceof QueueClaimLost || isStorageUnavailable(err)) throw err;
      const live = await withoutDeletedMailboxes(this.db, q);
      if (live === q) throw err;
      if (live.envelope.recipients.length === 0) {
        await dropQueued(this.db, this.table, q); // every mailbox gone: nothing to deliver, nothing reserved
        this.log.info('smtp.inbound_dropped', { queueId: q.id, reason: 'every recipient mailbox was deleted' });
        return 0;
      }
      return (await this.inbound.deliverQueued(live)).messageIds.length;
    }
  }

  release(trx: Sql, q: QueuedInbound): Promise<void> {
    return releaseReservations(trx, q);
  }

  get handoff() {
    return this.inbound.handoff;
  }
}
