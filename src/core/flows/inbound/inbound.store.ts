import { settleAll, sql, type Database, type Sql } from '../../../storage/database.js';
import { cancelScheduled } from '../sending/scheduled.store.js';
import { inboundSenderContactSql } from '../policy/contacts.store.js';
import type { EventBus } from '../../../storage/event-bus.js';
import { appendEvent } from '../../state/events/event-log.js';
import { type MailboxEvent } from '../../../types/mailbox-event.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import type { Clock } from '../../base/time.js';
import { insertAttachment, type AttachmentFile } from '../../state/attachments/attachment.store.js';
import { bodyFormatOf } from '../sending/outbound.store.js';
import { extractAtIngest } from '../../state/extraction/extract.js';
import { bodyBytes, chargeStorage, settleReservation } from '../../state/quota/storage-quota.store.js';
import { cleanMessageIds, findParentByMessageIds, inboundReferences } from '../delivery/threading.js';
import { createThread, touchThread } from '../delivery/thread.store.js';
import { screeningContext } from '../../state/screening/screening.store.js';
import { screenInbound } from './screening.js';
import { receivedEventData } from './received-event.js';
import { trustOfVerdicts } from '../../state/messages/message-trust.js';
import { snippetOf } from '../../state/messages/snippet.js';

/** A message arriving in a hosted mailbox, from SMTP inbound or from local delivery. */
export interface InboundMessage {
  mailboxId: string;
  from: string;
  fromDisplayName?: string | null;
  to: string[];
  cc?: string[];
  /** Reply-To addresses, where a reply-all answers (docs/workflow.md). */
  replyTo?: string[];
  subject: string;
  bodyText: string | null;
  bodyHtml: string | null;
  /** Message-ID, In-Reply-To and References headers as received; malformed ids are ignored. */
  internetMessageId: string | null;
  inReplyTo: string | null;
  references: string[];
  /** Blobs already in the blob store (parsed MIME parts, or a local sender's uploads). */
  attachments?: AttachmentFile[];
  rawBlobKey?: string | null;
  /** Size of the raw blob, charged to the storage quota with the bodies and attachments. */
  rawSizeBytes?: number;
  /** Counted but never refused by the storage quota (our bounces to the sender). */
  quotaExempt?: boolean;
  /** Reserved at intake (queued intake): settled against the stored size (see settleReservation). */
  reservedBytes?: number;
  receivedAt: Date;
  /** The Date header, when known. */
  sentAt?: Date | null;
  /** SPF/DKIM/DMARC verdicts (SMTP inbound). */
  authResults?: Record<string, unknown> | null;
  /** URLs of the List-Unsubscribe header (SMTP inbound), for link extraction. */
  listUnsubscribe?: readonly string[];
}

export interface StoredInbound {
  messageId: string;
  threadId: string;
  /** Already appended to the log; publish them after the transaction commits. None while held. */
  events: MailboxEvent[];
  /** Held by the mailbox's inboundScreening.holdAtScore: no message.received until released. */
  held: boolean;
}

/**
 * The one place an inbound message is written. It joins the thread of the newest message of
 * the same mailbox that its In-Reply-To / References name (RFC 5322 §3.6.4), else opens one.
 */
export class InboundStore {
  constructor(
    protected readonly db: Database,
    protected readonly bus: EventBus,
    protected readonly clock: Clock,
  ) {}

  /**
   * With `trx` the caller owns the transaction and must publish `events` after its commit (local
   * delivery commits the copy together with the recipient's status). Without, this commits and
   * publishes itself.
   *
   * `whole`: the caller rolls its transaction back on any refusal (SMTP intake), so the
   * statements go out together (one round trip when pipelined, Database.writeTx). Without it a
   * QUOTA_EXCEEDED is known before anything else is written and leaves the caller's transaction
   * usable (local delivery then fails that recipient in it).
   */
  async store(
    trx: Sql | undefined,
    message: InboundMessage,
    options: { whole?: boolean } = {},
  ): Promise<StoredInbound> {
    if (trx) return this.write(trx, message, options.whole === true);
    const stored = await this.db.writeTx((t) => this.write(t, message, true));
    await this.bus.publish(stored.events).catch(() => undefined); // the log is the truth; replay heals a lost publish
    return stored;
  }

  private async write(trx: Sql, m: InboundMessage, whole: boolean): Promise<StoredInbound> {
    const now = this.clock.now();
    const attachments = m.attachments ?? [];
    const storedBytes =
      (m.rawSizeBytes ?? 0) + bodyBytes(m.bodyText, m.bodyHtml) + attachments.reduce((s, a) => s + a.sizeBytes, 0);
    // The storage quota: the same update raises the inbound counter and locks the mailbox row
    // (mailbox row first, thread after, the lock order every writer here keeps; see local-delivery).
    const charge = () =>
      m.reservedBytes === undefined
        ? chargeStorage(trx, m.mailboxId, storedBytes, { exempt: m.quotaExempt === true, countAs: 'inbound' })
        : settleReservation(trx, m.mailboxId, m.reservedBytes, storedBytes);
    // When a refusal must leave nothing written (see store), before anything else; else with the
    // writes, after the reads, where it goes last in their batch (database.ts `hotRow`): the
    // mailbox row is then locked for the end of the transaction only.
    if (!whole) await charge();
    const references = inboundReferences(m.inReplyTo, m.references);
    const [parent, context] = await Promise.all([
      findParentByMessageIds(trx, m.mailboxId, references),
      screeningContext(trx, m.mailboxId),
    ]);
    const inReplyTo = cleanMessageIds([m.inReplyTo])[0] ?? null;
    const messageId = newId(ID_PREFIX.message, now.getTime());
    const threadId = parent ? parent.threadId : newId(ID_PREFIX.thread, now.getTime());
    const internetMessageId = cleanMessageIds([m.internetMessageId])[0] ?? null;
    // inReplyToMessageId names the parent only when it is the In-Reply-To message itself.
    const inReplyToMessageId = parent && parent.internetMessageId === inReplyTo ? parent.id : null;
    const fromDisplayName = (m.fromDisplayName ?? '').slice(0, 200);
    // Codes and links, found once here so every read is free; the reply text after the commit
    // (docs/api.md, "Extraction").
    const extracted = extractAtIngest(m);
    // Screened once here, before the sender joins the contacts (docs/screening.md).
    const { screening, held } = screenInbound(m, context);
    const trust = trustOfVerdicts(m.authResults);
    // Issued together and awaited together (one round trip when pipelined).
    const written = [
      whole ? charge() : undefined,
      parent
        ? touchThread(trx, threadId, now, 'inbound')
        : createThread(trx, {
            id: threadId,
            mailboxId: m.mailboxId,
            subject: m.subject,
            at: now,
            direction: 'inbound',
          }),
      // With authenticated mail, its sender stops being a new recipient for this mailbox (contacts.store.ts);
      // not while held: hostile mail must not make its sender a known contact (docs/screening.md).
      sql`${held ? sql`` : sql`with sender_contact as (${inboundSenderContactSql(m.mailboxId, m.from, trust.authenticated, now)})`}
      insert into message (id, mailbox_id, thread_id, direction, subject, from_address, from_display_name,
        to_addresses, cc_addresses, bcc_addresses, reply_to_addresses, mailbox_address, attachment_count, body_text, body_html, body_format,
        raw_blob_key, internet_message_id, in_reply_to_message_id, references_header, is_read, delivery_status,
        auth_results, extracted, screening, screening_held, created_at, received_at, sent_at, stored_bytes, snippet)
      values (${messageId}, ${m.mailboxId}, ${threadId}, 'inbound', ${m.subject}, ${m.from}, ${fromDisplayName},
        ${m.to}::text[], ${m.cc ?? []}::text[], ${[]}::text[], ${m.replyTo ?? []}::text[], (select address from mailbox where id = ${m.mailboxId}), ${attachments.length},
        ${m.bodyText}, ${m.bodyHtml}, ${bodyFormatOf(m.bodyText, m.bodyHtml)},
        ${m.rawBlobKey ?? null}, ${internetMessageId}, ${inReplyToMessageId}, ${references}::text[], false, null,
        ${m.authResults ? JSON.stringify(m.authResults) : null}::jsonb, ${JSON.stringify(extracted)}::jsonb,
        ${JSON.stringify(screening)}::jsonb, ${held}, ${now}, ${m.receivedAt}, ${m.sentAt ?? null}, ${storedBytes}, ${snippetOf(m.bodyText)})`.execute(
        trx,
      ),
      ...attachments.map((a) => insertAttachment(trx, { ...a, mailboxId: m.mailboxId, messageId, at: now })),
      // An answer in the thread first cancels the scheduled sends that asked for it (docs/workflow.md).
      parent ? cancelScheduled(trx, { threadId }, now) : undefined,
    ];
    // Held mail says nothing to waits, the live feed or webhooks until it is released.
    const event = held
      ? null
      : appendEvent(
          trx,
          m.mailboxId,
          'message.received',
          receivedEventData({
            messageId,
            threadId,
            subject: m.subject,
            fromAddress: m.from,
            fromDisplayName,
            toAddresses: m.to,
            ccAddresses: m.cc ?? [],
            attachmentCount: attachments.length,
            inReplyToMessageId,
            receivedAt: m.receivedAt,
            authResults: m.authResults ?? null,
            screening,
          }),
          now,
        );
    await settleAll(event ? [...written, event] : written);
    return { messageId, threadId, events: event ? [await event] : [], held };
  }
}
