import type { Readable } from 'node:stream';
import { AppError } from '../../base/errors.js';
import { assertRecipientCap } from '../delivery/recipient-cap.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import { isAddress, normalizeAddress } from '../../base/address.js';
import type { Clock } from '../../base/time.js';
import type { Logger } from '../../base/logger.js';
import type { Database } from '../../../storage/database.js';
import type { CommitGroup } from '../../../storage/commit-group.js';
import { SMALL_BLOB_BYTES } from '../../../storage/blobs/blob-store.js';
import { heldIfSmall } from '../../state/mail/spool.js';
import { checkMimeStructure } from '../../state/mail/mime-caps.js';
import { reservationFor } from '../../state/quota/storage-quota.store.js';
import { topHeaderLines } from '../../state/mail/raw-headers.js';
import { allFromDomains } from '../../state/mail/author-fields.js';
import { HostedDomainCache } from './hosted-domain-cache.js';
import { routeRecipient } from '../delivery/recipient-routing.js';
import type { InboundEnvelope, InboundRecipient } from './inbound-envelope.js';
import type { InboundDelivery } from './inbound-delivery.js';
import { enqueueInbound, type QueuedInbound } from './inbound-queue.store.js';
import { COMMIT_WITH_QUEUE_ROW } from '../intake/intake-queue.store.js';
import { LocalHandoff } from '../intake/local-handoff.js';
import type { FlowOutcome, IntakeFlow } from '../intake/intake-flow.js';

export type { InboundEnvelope } from './inbound-envelope.js';

/** What port 25's DATA ends with: stored in mailboxes now, or queued for the worker behind the 250. */
export type Accepted = { queued: false; messageIds: string[] } | { queued: true; queueId: string };

/**
 * Inbound mail on the MX port (25) as core use cases: which recipients are ours (never a relay),
 * and what DATA does with an accepted message. With queued intake (SMTP_INBOUND_QUEUE, the
 * default) a held message is checked for what must be refused before the 250 (MIME caps, a
 * hosted From), written to the inbound queue in one commit, and parsed, verified and stored by
 * the worker behind it (InboundQueueWorker); a hosted From, a message too large to hold, or one
 * that arrives while fewer than `directBelow` messages are being stored here takes the direct
 * path, stored before the 250 (InboundDelivery). docs/api.md, "Queued intake".
 */
export class InboundService {
  private readonly hosted: HostedDomainCache;
  /** Queued messages go to this process's worker (IntakeQueueWorker) after their commit. */
  readonly handoff = new LocalHandoff<QueuedInbound>();
  /** Messages this process is storing now (direct, or queued and taken by its worker): the load `directBelow` reads. */
  private storing = 0;

  constructor(
    private readonly db: Database,
    private readonly delivery: InboundDelivery,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: {
      maxRecipients: number;
      group?: CommitGroup | null;
      /** Queue held messages for the worker instead of storing them before the 250. */
      queue: boolean;
      /** With `queue`: store before the 250 while fewer than this many messages are being stored here (0: always queue). */
      directBelow?: number;
      /** Flow control by the queue's depth (intake-flow.ts); none without the queue. */
      flow?: IntakeFlow | null;
    },
  ) {
    this.hosted = new HostedDomainCache(db, clock);
  }

  /** Before MAIL FROM is answered: waits while the inbound queue is over its high water (intake-flow.ts). */
  admit(): Promise<FlowOutcome> {
    return this.options.flow?.admit() ?? Promise.resolve('open');
  }

  /**
   * RCPT TO: the primary address or an active alias of an enabled mailbox (550 5.1.1 for an
   * unknown local part of a hosted domain); any other domain, address literals included, is
   * 550 5.7.1. Percent hacks and bang paths are plain local parts here, so they are unknown.
   */
  async checkRecipient(address: string, alreadyAccepted: number): Promise<InboundRecipient> {
    assertRecipientCap(alreadyAccepted + 1, this.options.maxRecipients, 'RCPT TO');
    const normalized = normalizeAddress(address);
    if (/@\[.*\]$/.test(normalized)) throw new AppError('RELAY_DENIED');
    if (!isAddress(normalized)) throw new AppError('MAILBOX_ADDRESS_INVALID');
    const route = await routeRecipient(this.db, normalized, this.clock.now());
    if (route.kind === 'local') {
      // A mailbox already at its storage quota is refused here (552 5.2.2, for this recipient
      // only); the commit charges the message and refuses it if the last bytes went meanwhile.
      if (route.full) throw new AppError('QUOTA_EXCEEDED');
      return { address: normalized, mailboxId: route.mailboxId, quotaLimited: route.limited };
    }
    throw new AppError(route.kind === 'unknown-local' ? 'MAILBOX_UNKNOWN' : 'RELAY_DENIED');
  }

  /**
   * DATA. Resolves after the commit that makes the message durable (the queue row, or the
   * message rows on the direct path); every refusal of the direct path is also made here before
   * a message is queued: MIME caps (554 5.6.0), a From in a hosted domain (verified now, 550
   * 5.7.1 unsigned), the storage quota (reserved in the queue row's commit; a mailbox without
   * room for the reservation takes the direct path, whose exact charge answers 552 5.2.2).
   */
  async accept(envelope: InboundEnvelope, raw: Readable): Promise<Accepted> {
    const receivedAt = this.clock.now();
    // Small mail is read whole first (nothing is stored yet if the channel's guard refuses it meanwhile).
    const source = await heldIfSmall(raw, SMALL_BLOB_BYTES);
    // Below `directBelow` the worker here is idle enough that storing now costs the 250 only the
    // parse and one commit, and spares the message its second commit (the event comes sooner).
    const quiet = this.storing < (this.options.directBelow ?? 0);
    if (this.options.queue && !quiet && Buffer.isBuffer(source) && (await this.mayQueue(source))) {
      try {
        return { queued: true, queueId: await this.enqueue(envelope, source, receivedAt) };
      } catch (err) {
        // The reservation did not fit: near its quota a mailbox gets the exact charge of the
        // direct path, which refuses only what really does not fit.
        if (!(err instanceof AppError && err.code === 'QUOTA_EXCEEDED')) throw err;
      }
    }
    return { queued: false, ...(await this.counted(() => this.delivery.deliver(envelope, source, receivedAt))) };
  }

  /**
   * Delivers a queued message the worker claimed (the queue row goes in the same commit); one
   * handed over during its commit is parsed and verified meanwhile and written after `committed`.
   */
  deliverQueued(q: QueuedInbound, committed?: Promise<void>): Promise<{ messageIds: string[] }> {
    return this.counted(() => this.delivery.deliver(q.envelope, q.raw, q.receivedAt, q, committed));
  }

  /** Runs a delivery counted in `storing`. */
  private async counted<T>(work: () => Promise<T>): Promise<T> {
    this.storing++;
    try {
      return await work();
    } finally {
      this.storing--;
    }
  }

  /** MIME caps refuse now; a From in a hosted domain is verified now (its refusal is 550 at DATA). */
  private async mayQueue(raw: Buffer): Promise<boolean> {
    await checkMimeStructure(raw);
    const domains = allFromDomains(topHeaderLines(raw));
    return domains.length === 0 || (await this.hosted.hostedAmong(domains)).length === 0;
  }

  private async enqueue(envelope: InboundEnvelope, raw: Buffer, receivedAt: Date): Promise<string> {
    const id = newId(ID_PREFIX.queuedInbound, receivedAt.getTime());
    const row = { id, envelope, receivedAt, reservedBytes: reservationFor(raw.length), raw };
    const lockKey = [...envelope.recipients.map((r) => r.mailboxId)].sort()[0]!;
    const group = this.options.group;
    await this.handoff.write(
      (claim) =>
        group
          ? group.run(lockKey, (trx) => enqueueInbound(trx, row, claim), COMMIT_WITH_QUEUE_ROW)
          : this.db.writeTx((trx) => enqueueInbound(trx, row, claim), COMMIT_WITH_QUEUE_ROW),
      (claim) => ({ ...row, ...claim, attempts: 1 }),
    );
    this.log.info('smtp.inbound_queued', {
      queueId: id,
      recipients: envelope.recipients.length,
      clientAddress: envelope.clientAddress,
      sizeBytes: raw.length,
    });
    return id;
  }
}
