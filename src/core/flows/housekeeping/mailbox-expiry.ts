import type { Database } from '../../../storage/database.js';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';
import type { Logger } from '../../base/logger.js';
import type { Clock } from '../../base/time.js';
import { PollingLoop } from '../../base/loops/polling-loop.js';
import { deleteOneExpiredMailbox } from './mailbox-expiry.store.js';
import { unreferencedKeys } from './storage-sweeper.store.js';
import { BLOB_REFERENCES } from './storage-sweeper.js';

/**
 * How often the worker looks for ephemeral mailboxes past their end. Mail and tokens are refused
 * at the end itself (the routing and token checks compare the expiry); this only removes the
 * data, so "within a minute" holds with room for a slow pass.
 */
export const MAILBOX_EXPIRY_POLL_MS = 20_000;

/**
 * Removes ephemeral mailboxes past their end (docs/workflow.md, "Ephemeral mailboxes"): the
 * mailbox and everything it owns in one transaction, then the blobs no other row names.
 * Idempotent and safe to run on several workers at once.
 */
export class MailboxExpirySweeper {
  constructor(
    private readonly db: Database,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
  ) {}

  /** Removes one due mailbox; its id, or null when none is due. */
  async sweepOne(): Promise<string | null> {
    const removed = await deleteOneExpiredMailbox(this.db, this.clock.now());
    if (!removed) return null;
    for (const key of await unreferencedKeys(this.db, removed.blobKeys, BLOB_REFERENCES)) await this.blobs.delete(key);
    return removed.mailboxId;
  }

  /** Removes every due mailbox; how many. */
  async sweep(): Promise<number> {
    let n = 0;
    while ((await this.sweepOne()) !== null) n++;
    return n;
  }
}

/** Runs the sweeper on the worker role, every MAILBOX_EXPIRY_POLL_MS and at once while it finds work. */
export function startMailboxExpiry(
  sweeper: MailboxExpirySweeper,
  log: Logger,
  intervalMs = MAILBOX_EXPIRY_POLL_MS,
): { stop(): Promise<void> } {
  const loop = new PollingLoop(
    async () => {
      const mailboxId = await sweeper.sweepOne();
      if (mailboxId) log.info('mailbox.expired_removed', { mailboxId });
      return mailboxId !== null;
    },
    { intervalMs, onError: (err) => log.warn('mailbox.expiry_sweep_failed', { err }) },
  );
  loop.start();
  return { stop: () => loop.stop() };
}
