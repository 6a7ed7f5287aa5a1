import { Readable } from 'node:stream';
import { AppError } from '../errors.js';
import { ID_PREFIX, newId } from '../ids.js';
import { isAddress, normalizeAddress } from '../address.js';
import type { Clock } from '../time.js';
import type { Logger } from '../logger.js';
import type { EventBus } from '../events/event-bus.js';
import type { MailboxEvent } from '../events/event-log.js';
import type { Database } from '../../storage/database.js';
import type { BlobStore } from '../../storage/blobs/blob-store.js';
import { isStorageUnavailable } from '../../storage/errors.js';
import { parseMime } from '../mail/mime-parse.js';
import { verifyAuthentication } from '../mail/auth-verdict.js';
import { tee } from '../mail/tee.js';
import type { InboundStore } from './inbound-store.js';
import type { DnsLookup } from './dns-resolver.js';
import { routeRecipient } from './recipient-routing.js';

export interface InboundEnvelope {
  /** MAIL FROM; empty for the null sender of bounces (RFC 5321 §4.5.5). */
  mailFrom: string;
  recipients: readonly { address: string; mailboxId: string }[];
  clientAddress: string;
  helo: string;
  tls: boolean;
}

/**
 * Inbound mail on the MX port (25) as core use cases: which recipients are ours (never a relay),
 * and storing an accepted message in every mailbox it reaches, in one transaction, through the
 * InboundStore (threading, counters, message.received), with its SPF/DKIM/DMARC verdicts.
 */
export class ReceivingService {
  constructor(
    private readonly db: Database,
    private readonly blobs: BlobStore,
    private readonly inbound: InboundStore,
    private readonly bus: EventBus,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly resolver: DnsLookup,
    private readonly options: { hostname: string; maxRecipients: number },
  ) {}

  /**
   * RCPT TO: the primary address or an active alias of an enabled mailbox (550 5.1.1 for an
   * unknown local part of a hosted domain); any other domain, address literals included, is
   * 550 5.7.1. Percent hacks and bang paths are plain local parts here, so they are unknown.
   */
  async checkRecipient(address: string, alreadyAccepted: number): Promise<{ address: string; mailboxId: string }> {
    if (alreadyAccepted >= this.options.maxRecipients) throw new AppError('TOO_MANY_RECIPIENTS');
    const normalized = normalizeAddress(address);
    if (/@\[.*\]$/.test(normalized)) throw new AppError('RELAY_DENIED');
    if (!isAddress(normalized)) throw new AppError('MAILBOX_ADDRESS_INVALID');
    const route = await routeRecipient(this.db, normalized);
    if (route.kind === 'local') return { address: normalized, mailboxId: route.mailboxId };
    throw new AppError(route.kind === 'unknown-local' ? 'MAILBOX_UNKNOWN' : 'RELAY_DENIED');
  }

  /**
   * DATA: the raw message is stored (with our Received header, RFC 5321 §4.4), parsed under the
   * MIME caps and verified, all while it arrives; then one copy per distinct mailbox commits in
   * one transaction. Resolves after the commit; on failure nothing stays behind (after a lost
   * database connection, the storage sweeper removes what no row names).
   */
  async accept(envelope: InboundEnvelope, raw: Readable): Promise<{ messageIds: string[] }> {
    const receivedAt = this.clock.now();
    const rawKey = `raw/${newId(ID_PREFIX.message, receivedAt.getTime())}`;
    const [toStore, toParse, toVerify] = tee(raw, 3);
    const received = Buffer.from(this.receivedHeader(envelope, rawKey, receivedAt));
    const [stored, parsed, verdict] = await Promise.allSettled([
      this.blobs.put(rawKey, Readable.from(prepend(received, toStore!))),
      parseMime(toParse!, this.blobs),
      verifyAuthentication(toVerify!, { clientAddress: envelope.clientAddress, helo: envelope.helo, mailFrom: envelope.mailFrom, receivedBy: this.options.hostname }, this.resolver),
    ]);
    const keys = [rawKey, ...(parsed.status === 'fulfilled' ? parsed.value.attachments.map((a) => a.blobKey) : [])];
    try {
      if (stored.status === 'rejected') throw stored.reason;
      if (parsed.status === 'rejected') throw parsed.reason;
      const m = parsed.value;
      const authResults = verdict.status === 'fulfilled' ? verdict.value : null;
      const mailboxIds = [...new Set(envelope.recipients.map((r) => r.mailboxId))].sort(); // lock order
      const from = m.from[0] ?? { address: isAddress(envelope.mailFrom) ? envelope.mailFrom : '', name: '' };
      const copies = await this.db.tx(async (trx) => {
        const out: { messageId: string; events: MailboxEvent[] }[] = [];
        for (const mailboxId of mailboxIds) {
          out.push(await this.inbound.store(trx, {
            mailboxId, from: from.address, fromDisplayName: from.name, to: m.to, cc: m.cc, subject: m.subject,
            bodyText: m.text, bodyHtml: m.html, internetMessageId: m.messageId, inReplyTo: m.inReplyTo, references: m.references,
            attachments: m.attachments, rawBlobKey: rawKey, receivedAt, sentAt: m.date, authResults: authResults as unknown as Record<string, unknown>,
          }));
        }
        return out;
      });
      await this.bus.publish(copies.flatMap((c) => c.events)).catch((err) => this.log.warn('events.publish_failed', { err }));
      return { messageIds: copies.map((c) => c.messageId) };
    } catch (err) {
      // After a lost connection the transaction may have committed: keep the blobs then (the
      // storage sweeper removes them if no row names them), never delete what a row may name.
      if (!isStorageUnavailable(err)) await Promise.all(keys.map((k) => this.blobs.delete(k).catch(() => undefined)));
      throw err;
    }
  }

  /** RFC 5321 §4.4 trace header: who connected, as whom, to which host, when. */
  private receivedHeader(e: InboundEnvelope, id: string, at: Date): string {
    const forClause = e.recipients.length === 1 ? `\r\n\tfor <${e.recipients[0]!.address}>` : '';
    const date = at.toUTCString().replace(/GMT$/, '+0000');
    return `Received: from ${e.helo || 'unknown'} ([${e.clientAddress}])\r\n\tby ${this.options.hostname} with ${e.tls ? 'ESMTPS' : 'ESMTP'} id ${id.slice(4)}${forClause};\r\n\t${date}\r\n`;
  }
}

async function* prepend(head: Buffer, rest: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  yield head;
  yield* rest;
}
