import { createHash } from 'node:crypto';
import type { Database } from '../../../storage/database.js';
import type { Principal } from '../../access/principal.js';
import { AppError, notFound } from '../../base/errors.js';
import { decodeFeedCursor, encodeFeedCursor } from '../../state/events/event-feed.js';
import type { EventService } from '../../state/events/event.service.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import type { NetworkTargetPolicy } from '../../base/net/network-targets.js';
import type { Clock } from '../../base/time.js';
import type { TokenCipher } from '../../access/token-cipher.js';
import { parseWebhookUrl, resolveWebhookTarget } from '../webhooks/webhook-target.js';
import type { EventType } from '../../../types/mailbox-event.js';
import {
  deleteLapsed,
  deleteSubscription,
  findSubscription,
  firstUndelivered,
  insertSubscription,
  lockMailboxHead,
  queueMissing,
  refreshSubscription,
} from './subscription.store.js';

/** Lease bounds: the client suggests `ttlMs`, the server grants within these (SEP-3415, Subscription TTL). */
export const LEASE = { defaultMs: 3_600_000, minMs: 60_000, maxMs: 86_400_000 } as const;

/** How far back the sweep looks for events a new subscription's creation raced past (a window of milliseconds). */
const CATCH_UP_MS = 120_000;

export interface SubscribeInput {
  type: EventType;
  mailboxAddress: string | undefined;
  url: string;
  secret: string;
  cursor: string | null;
  /** Suggested lease; undefined: the default; null (no expiry asked): the longest granted. */
  ttlMs: number | null | undefined;
}

export interface Subscribed {
  id: string;
  refreshBefore: string;
  cursor: string;
  truncated: boolean;
}

/** A Standard Webhooks secret: `whsec_` and base64 of 24 to 64 bytes (the client's, never ours). */
function checkSecret(secret: string): void {
  const encoded = secret.startsWith('whsec_') ? secret.slice(6) : '';
  const bytes = /^[A-Za-z0-9+/]+={0,2}$/.test(encoded) ? Buffer.from(encoded, 'base64').length : 0;
  if (bytes < 24 || bytes > 64)
    throw new AppError('VALIDATION_FAILED', 'delivery.secret: a whsec_ secret of 24 to 64 base64-encoded bytes');
}

/**
 * Webhook subscriptions of the MCP events extension. Each is stored with a webhook row of its own
 * (hidden from the webhook routes), so the webhook outbox and worker deliver it: queued with each
 * event in the event's transaction, signed, retried, under the network-target rule and whatever
 * fairness the worker applies between tenants. Identity is (token, url, type, mailbox): the same
 * subscribe again is a refresh. Authorization is the tools' (MailboxRead; a domain token names
 * the mailbox), checked on subscribe and, for as long as it lives, by the sweeper.
 */
export class EventSubscriptionService {
  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly cipher: TokenCipher,
    private readonly clock: Clock,
    private readonly policy: NetworkTargetPolicy,
  ) {}

  async subscribe(principal: Principal, input: SubscribeInput): Promise<Subscribed> {
    const mailbox = await this.events.openSubscription(principal, input.mailboxAddress);
    checkSecret(input.secret);
    const url = parseWebhookUrl(input.url);
    // Refused now rather than failing silently later; the worker checks again before every send.
    await resolveWebhookTarget(url, this.policy);
    const from = input.cursor === null ? null : decodeFeedCursor(input.cursor, mailbox.id);
    const key = createHash('sha256')
      .update(JSON.stringify([principal.tokenId, url.toString(), input.type, mailbox.id]))
      .digest('hex');
    const now = this.clock.now();
    const ttl = input.ttlMs === undefined ? LEASE.defaultMs : (input.ttlMs ?? LEASE.maxMs);
    const refreshBefore = new Date(now.getTime() + Math.min(LEASE.maxMs, Math.max(LEASE.minMs, ttl)));
    // Where a new subscription starts: after the cursor, or (retention removed events after it)
    // at the oldest event still held, saying so. Read before the transaction: on PGlite the
    // transaction holds the only connection.
    let replayFrom: { seq: number; truncated: boolean } | null = null;
    if (from) {
      const r = await this.events.replay(mailbox.id, from.seq, 1);
      replayFrom = !r.resyncRequired
        ? { seq: from.seq, truncated: false }
        : { seq: r.oldestSeq !== null && from.seq < r.headSeq ? r.oldestSeq - 1 : r.headSeq, truncated: true };
    }
    const result = await this.db.tx(async (trx) => {
      const head = await lockMailboxHead(trx, mailbox.id);
      const existing = await findSubscription(trx, key);
      if (existing) {
        await refreshSubscription(trx, existing, refreshBefore, this.cipher.encrypt(input.secret, existing.webhook_id));
        // Safe to persist: everything up to it is delivered (or the subscription's start).
        const pending = await firstUndelivered(trx, existing.webhook_id);
        return { id: existing.id, seq: pending === null ? head : pending - 1, truncated: false, created: false };
      }
      const start = replayFrom?.seq ?? head;
      const truncated = replayFrom?.truncated ?? false;
      const id = newId(ID_PREFIX.eventSubscription);
      const webhookId = newId(ID_PREFIX.webhook);
      await insertSubscription(trx, {
        id,
        webhookId,
        key,
        domainId: principal.domainId,
        mailboxId: mailbox.id,
        tokenId: principal.tokenId,
        eventType: input.type,
        url: url.toString(),
        secretCipher: this.cipher.encrypt(input.secret, webhookId),
        startSeq: start,
        refreshBefore,
        at: now,
      });
      await queueMissing(this.db, { subscriptionId: id }, now, trx);
      return { id, seq: start, truncated, created: true };
    });
    return {
      id: result.id,
      refreshBefore: refreshBefore.toISOString(),
      cursor: encodeFeedCursor({ mailboxId: mailbox.id, seq: result.seq }),
      truncated: result.truncated,
    };
  }

  async unsubscribe(
    principal: Principal,
    input: { type: EventType; mailboxAddress: string | undefined; url: string },
  ): Promise<void> {
    const mailbox = await this.events.openSubscription(principal, input.mailboxAddress);
    const url = parseWebhookUrl(input.url);
    const key = createHash('sha256')
      .update(JSON.stringify([principal.tokenId, url.toString(), input.type, mailbox.id]))
      .digest('hex');
    if (!(await deleteSubscription(this.db, key))) throw notFound('Subscription');
  }

  /**
   * Housekeeping (worker role): removes lapsed subscriptions (lease not refreshed, token no longer
   * valid for the mailbox) and queues anything a subscription's creation raced past.
   */
  async sweep(): Promise<{ removed: number; queued: number }> {
    const now = this.clock.now();
    const removed = await deleteLapsed(this.db, now);
    const queued = await queueMissing(this.db, { since: new Date(now.getTime() - CATCH_UP_MS) }, now);
    return { removed, queued };
  }
}
