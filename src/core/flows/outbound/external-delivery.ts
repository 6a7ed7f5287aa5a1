import { ID_PREFIX, newId } from '../../base/ids.js';
import { envelopeAddress } from '../../base/address.js';
import type { Logger } from '../../base/logger.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import type { Database } from '../../../storage/database.js';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import { observability } from '../../base/observability.js';
import { composeMessage } from '../../state/mail/compose.js';
import { prepareForTransfer, rfc5322Date } from '../../state/mail/raw-headers.js';
import { signMessage } from '../../state/mail/dkim-sign.js';
import { hasEightBitOctets, needsSmtpUtf8, toSevenBit } from '../../state/mail/seven-bit.js';
import type { InboundStore } from '../inbound/inbound.store.js';
import type { OutboundMessage, PendingRecipient } from './local-delivery.js';
import type { DkimKeys } from './dkim-keys.js';
import type { ExternalTransport, OutgoingMessage } from './external-transport.js';
import type { LeaseGuard } from './job-lease.js';
import { recordRecipientOutcome } from './delivery-status.js';
import { buildBounce, headerSection, type Failure } from './bounce.js';
import { keepSentRaw } from './sent-raw.js';

/** An outbound message with what leaving the system needs beyond local delivery. */
export interface TransferMessage extends OutboundMessage {
  domainId: string;
  rawBlobKey: string | null;
  /** The source as it left, once an attempt stored it (sent-raw.ts). */
  sentRawBlobKey?: string | null;
  createdAt: Date;
  /** RFC 3834 Auto-Submitted of API mail under the loop guard; null otherwise. */
  autoSubmitted?: string | null;
}

export interface TransferDeps {
  db: Database;
  blobs: BlobStore;
  inbound: InboundStore;
  dkim: DkimKeys;
  /** Null when external delivery is off: external recipients wait. */
  transport: ExternalTransport | null;
  hostname: string;
  /** A recipient still deferred this long after the message was queued fails for good (MAX_DELIVERY_AGE). */
  maxAgeMs: number;
  log: Logger;
}

/**
 * The bytes that leave: the submitted raw message (Bcc removed, Message-ID and Date completed) or,
 * for API sends, the composed MIME; DKIM-signed with the sender domain's key. The 7-bit form for a
 * server without 8BITMIME is made only when one is met, and signed after the conversion, so its
 * signature covers the body that server receives.
 */
export async function transferForm(
  d: TransferDeps,
  m: TransferMessage,
  recipients: string[],
  at: Date,
): Promise<OutgoingMessage> {
  const unsigned = await unsignedForm(d, m);
  const sign = async (raw: Buffer) => {
    const signed = await signMessage(raw, await d.dkim.forDomain(m.domainId), at);
    if (!signed.signed) d.log.warn('delivery.dkim_unsigned', { messageId: m.id, error: signed.error });
    return signed.raw;
  };
  return {
    raw: await sign(unsigned),
    eightBit: hasEightBitOctets(unsigned),
    smtpUtf8: needsSmtpUtf8({ from: envelopeAddress(m.fromAddress), to: recipients.map(envelopeAddress) }, unsigned),
    sevenBit: async () => sign(await toSevenBit(unsigned)),
  };
}

async function unsignedForm(d: TransferDeps, m: TransferMessage): Promise<Buffer> {
  const date = m.sentAt ?? m.createdAt;
  const raw = m.rawBlobKey
    ? prepareForTransfer(await d.blobs.get(m.rawBlobKey), { messageId: m.internetMessageId, date })
    : await composeMessage(
        {
          from: { address: m.fromAddress, name: m.fromDisplayName },
          to: m.to,
          cc: m.cc,
          subject: m.subject,
          text: m.bodyText,
          html: m.bodyHtml,
          messageId: m.internetMessageId,
          inReplyTo: m.inReplyTo,
          references: m.references,
          date,
          attachments: m.attachments,
          autoSubmitted: m.autoSubmitted ?? null,
        },
        d.blobs,
      );
  return raw;
}

/**
 * One delivery attempt for the external recipients of a message. Runs only while the job's lease
 * holds (a recipient is never handed to two transports at once); each outcome is recorded under
 * the recipient's row lock, so one already final is never changed or sent again. Temporary
 * failures past MAX_DELIVERY_AGE become permanent; permanent ones bounce (RFC 3464).
 */
export async function deliverExternally(
  d: TransferDeps,
  m: TransferMessage,
  recipients: PendingRecipient[],
  lease: LeaseGuard | undefined,
  at: Date,
): Promise<{ events: MailboxEvent[]; deferred: number }> {
  if (!d.transport || recipients.length === 0) return { events: [], deferred: 0 };
  if (lease && !(await lease.stillHeld())) return { events: [], deferred: recipients.length };
  const to = recipients.map((r) => r.address);
  const message = await transferForm(d, m, to, at);
  // Before the transport: what is stored is what was handed over, even if the process dies mid-send.
  await keepSentRaw(d, m, message.raw, at);
  const outcomes = await d.transport.deliver(m.fromAddress, to, message, lease?.signal);
  const expired = at.getTime() - m.createdAt.getTime() >= d.maxAgeMs;
  const events: MailboxEvent[] = [];
  const failures: (Failure & { recipient: PendingRecipient })[] = [];
  let deferred = 0;
  for (const o of outcomes) {
    const recipient = recipients.find((r) => r.address === o.address)!;
    if (o.status === 'failed' || (o.status === 'deferred' && expired)) {
      failures.push({
        recipient,
        address: o.address,
        reply: o.status === 'failed' ? o.reply : `${o.reply} (given up after ${Math.round(d.maxAgeMs / 3_600_000)} h)`,
        expired: o.status !== 'failed',
      });
      continue;
    }
    const event = await d.db.tx((trx) => recordRecipientOutcome(trx, m, recipient, o.status, o.reply, at));
    if (event) events.push(event);
    if (o.status === 'deferred') deferred++;
    observability().deliveryOutcome(d.transport.route, o.status);
  }
  if (failures.length) {
    events.push(...(await failWithBounce(d, m, failures, headerSection(message.raw), at)));
    observability().deliveryOutcome(d.transport.route, 'failed', failures.length);
  }
  return { events, deferred };
}

/**
 * Marks recipients permanently failed and, for those that were still unfinished, puts one
 * bounce listing them into the sender's mailbox, in the same transaction: a failure is never
 * recorded without its bounce, nor bounced twice.
 */
export async function failWithBounce(
  d: TransferDeps,
  m: TransferMessage,
  failures: (Failure & { recipient: PendingRecipient })[],
  originalHeaders: string | null,
  at: Date,
): Promise<MailboxEvent[]> {
  const rawKey = `raw/${newId(ID_PREFIX.message, at.getTime())}`;
  let wrote = false;
  try {
    const { events } = await d.db.tx(async (trx) => {
      const out: MailboxEvent[] = [];
      const changed: Failure[] = [];
      for (const f of failures) {
        const event = await recordRecipientOutcome(trx, m, f.recipient, 'failed', f.reply, at);
        if (event) {
          out.push(event);
          changed.push(f);
        }
      }
      if (changed.length === 0) return { events: out };
      const bounce = buildBounce({
        hostname: d.hostname,
        mailboxId: m.mailboxId,
        sender: m.fromAddress,
        failures: changed,
        at,
        original: {
          internetMessageId: m.internetMessageId,
          subject: m.subject,
          headers: originalHeaders ?? basicHeaders(m),
          queuedAt: m.createdAt,
        },
      });
      const { sizeBytes: rawSizeBytes } = await d.blobs.put(rawKey, bounce.raw);
      wrote = true;
      const stored = await d.inbound.store(trx, {
        ...bounce.inbound,
        rawBlobKey: rawKey,
        rawSizeBytes,
        quotaExempt: true,
      });
      return { events: [...out, ...stored.events] };
    });
    return events;
  } catch (err) {
    // After a lost COMMIT the bounce may be stored after all: leave its blob to the storage sweeper.
    if (wrote && !isStorageUnavailable(err)) await d.blobs.delete(rawKey).catch(() => undefined);
    throw err;
  }
}

/** The original's main header fields, for a bounce of a message that never left as MIME. */
function basicHeaders(m: TransferMessage): string {
  return [
    `From: ${m.fromAddress}`,
    `To: ${m.to.join(', ')}`,
    ...(m.cc.length ? [`Cc: ${m.cc.join(', ')}`] : []),
    `Subject: ${m.subject}`,
    `Date: ${rfc5322Date(m.sentAt ?? m.createdAt)}`,
    ...(m.internetMessageId ? [`Message-ID: ${m.internetMessageId}`] : []),
  ].join('\r\n');
}
