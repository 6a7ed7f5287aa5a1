import type { Database } from '../../../storage/database.js';
import type { EventBus } from '../../../storage/event-bus.js';
import type { Principal } from '../../access/principal.js';
import { requireScope } from '../../access/access.js';
import type { AuditStore } from '../../state/audit/audit.store.js';
import type { Channel } from '../../state/audit/audit.schemas.js';
import { appendEvent } from '../../state/events/event-log.js';
import { notFound } from '../../base/errors.js';
import type { Logger } from '../../base/logger.js';
import type { Clock } from '../../base/time.js';
import { targetVisibility } from '../../state/messages/message.access.js';
import { receivedEventData } from './received-event.js';
import type { ReleaseResult } from './release.schemas.js';
import { UNSCREENED, type Screening } from '../../state/screening/screening.schemas.js';
import { liveMessageExists, releaseHeld } from '../../state/screening/screening.store.js';
import { jsonValue } from '../../../storage/database.js';

/**
 * Releases inbound mail held by screening (docs/screening.md): the message joins lists, search,
 * threads and waits, and its message.received event is appended now, so waits, the live feed and
 * webhooks see it from this moment. The release and its audit entry commit together.
 */
export class ScreeningReleaseService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditStore,
    private readonly bus: EventBus,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  async release(
    principal: Principal,
    input: { messageId: string; mailboxAddress?: string | undefined },
    channel: Channel,
  ): Promise<ReleaseResult> {
    // A mailbox token granted MailboxApprove, or a domain token (it holds every scope): never the agent's own set.
    requireScope(principal, 'MailboxApprove');
    const visibility = await targetVisibility(this.db, principal, input.mailboxAddress);
    const at = this.clock.now();
    const event = await this.db.tx(async (trx) => {
      const row = await releaseHeld(trx, visibility, input.messageId);
      if (!row) return null;
      const screening = (jsonValue(row.screening) as Screening | null) ?? UNSCREENED;
      await this.audit.append(
        {
          mailboxId: row.mailbox_id,
          domainId: row.domain_id,
          tokenId: principal.tokenId,
          channel,
          decision: 'released',
          rule: 'inboundScreening',
          reason: `score ${screening.score}: ${screening.signals.join(', ') || 'no signals'}`,
          recipientCount: 0,
          messageId: row.id,
          at,
        },
        trx,
      );
      return appendEvent(
        trx,
        row.mailbox_id,
        'message.received',
        receivedEventData({
          messageId: row.id,
          threadId: row.thread_id,
          subject: row.subject,
          fromAddress: row.from_address,
          fromDisplayName: row.from_display_name,
          toAddresses: row.to_addresses,
          ccAddresses: row.cc_addresses,
          attachmentCount: row.attachment_count,
          inReplyToMessageId: row.in_reply_to_message_id,
          receivedAt: new Date(row.received_at ?? row.created_at),
          authResults: jsonValue(row.auth_results),
          screening,
        }),
        at,
      );
    });
    if (!event) {
      if (!(await liveMessageExists(this.db.db, visibility, input.messageId))) throw notFound('Message');
      return { messageId: input.messageId, released: false };
    }
    this.log.info('message.released', { messageId: input.messageId, byTokenId: principal.tokenId });
    await this.bus.publish([event]).catch((err) => this.log.warn('events.publish_failed', { err }));
    return { messageId: input.messageId, released: true };
  }
}
