import { p } from '@mikro-orm/core';

/**
 * The columns of a row that workers claim under a lease and retry (`outbox_job`, `inbound_queue`,
 * `submission_queue`): its state, attempts, when it is due, and the claim a worker holds on it.
 */
export const leasedWorkColumns = () => ({
  /** `pending` until done; what else it may be is the table's own (`failed`: set aside for an operator). */
  status: p.string().length(16),
  attempts: p.integer().default(0),
  runAfter: p.datetime(3),
  leaseUntil: p.datetime(3).nullable(),
  lockedBy: p.string().length(100).nullable(),
  lastError: p.text().nullable(),
});
