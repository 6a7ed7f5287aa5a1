import type { Database } from '../../../storage/database.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { QueueClaimLost } from '../intake/intake-queue.store.js';
import type { IntakeQueue } from '../intake/intake-queue.worker.js';
import type { SubmissionService } from './submission.service.js';
import {
  claimSubmissions,
  dropSubmission,
  failSubmission,
  mailboxExists,
  postponeSubmission,
  type QueuedSubmission,
} from './submission-queue.store.js';

/** Port 587's queue (`submission_queue`) as the IntakeQueueWorker drives it: rows written by SubmissionService. */
export class SubmissionQueue implements IntakeQueue<QueuedSubmission> {
  readonly route = 'submission';

  constructor(
    private readonly db: Database,
    private readonly submission: SubmissionService,
    private readonly log: Logger,
  ) {}

  claim(lockedBy: string, limit: number, leaseMs: number, now: Date): Promise<QueuedSubmission[]> {
    return claimSubmissions(this.db, lockedBy, limit, leaseMs, now);
  }

  /** A mailbox deleted while its message waited takes nothing: the row is dropped, as if deleted just after. */
  async store(q: QueuedSubmission): Promise<number> {
    try {
      await this.submission.storeQueued(q);
      return 1;
    } catch (err) {
      if (err instanceof AppError || err instanceof QueueClaimLost || isStorageUnavailable(err)) throw err;
      if (await mailboxExists(this.db, q)) throw err;
      await dropSubmission(this.db, q);
      this.log.info('smtp.submission_dropped', { messageId: q.id, reason: 'the mailbox was deleted' });
      return 0;
    }
  }

  fail(q: QueuedSubmission, reason: string): Promise<void> {
    return failSubmission(this.db, q, reason);
  }

  postpone(q: QueuedSubmission, runAfter: Date, reason: string): Promise<void> {
    return postponeSubmission(this.db, q, runAfter, reason);
  }

  whenQueued(kick: () => void): () => void {
    return this.submission.whenQueued(kick);
  }
}
