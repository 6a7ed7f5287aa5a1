import type { Database, Sql } from '../../../storage/database.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import { AppError } from '../../base/errors.js';
import type { Logger } from '../../base/logger.js';
import { dropQueued, QueueClaimLost } from '../intake/intake-queue.store.js';
import { releaseStorage } from '../../state/quota/storage-quota.store.js';
import type { IntakeQueue } from '../intake/intake-queue.worker.js';
import type { SubmissionService } from './submission.service.js';
import { claimSubmissions, mailboxExists, type QueuedSubmission } from './submission-queue.store.js';

/** Port 587's queue (`submission_queue`) as the IntakeQueueWorker drives it: rows written by SubmissionService. */
export class SubmissionQueue implements IntakeQueue<QueuedSubmission> {
  readonly route = 'submission';
  readonly table = 'submission_queue';

  constructor(
    private readonly db: Database,
    private readonly submission: SubmissionService,
    private readonly log: Logger,
  ) {}

  claim(lockedBy: string, limit: number, leaseMs: number, now: Date): Promise<QueuedSubmission[]> {
    return claimSubmissions(this.db, lockedBy, limit, leaseMs, now);
  }

  /** A mailbox deleted while its message waited takes nothing: the row is dropped, as if deleted just after. */
  async store(q: QueuedSubmission, committed?: Promise<void>): Promise<number> {
    await committed; // a row handed over during its commit is written once it is (not prepared early here)
    try {
      await this.submission.storeQueued(q);
      return 1;
    } catch (err) {
      if (err instanceof AppError || err instanceof QueueClaimLost || isStorageUnavailable(err)) throw err;
      if (await mailboxExists(this.db, q)) throw err;
      await dropQueued(this.db, this.table, q); // its reservation went with the mailbox row
      this.log.info('smtp.submission_dropped', { messageId: q.id, reason: 'the mailbox was deleted' });
      return 0;
    }
  }

  release(trx: Sql, q: QueuedSubmission): Promise<void> {
    return releaseStorage(trx, q.mailbox.id, q.reservedBytes);
  }

  get handoff() {
    return this.submission.handoff;
  }
}
