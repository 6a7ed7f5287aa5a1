import { Readable, pipeline } from 'node:stream';
import { AppError } from '../../base/errors.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import { isAddress } from '../../base/address.js';
import type { Logger } from '../../base/logger.js';
import type { EventBus } from '../../../storage/event-bus.js';
import type { MailboxEvent } from '../../../types/mailbox-event.js';
import { settleAll, type Database, type Sql } from '../../../storage/database.js';
import type { CommitGroup } from '../../../storage/commit-group.js';
import { SMALL_BLOB_BYTES, type BlobStore } from '../../../storage/blobs/blob-store.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import { parseMime } from '../../state/mail/mime-parse.js';
import { verifyAuthentication, type AuthVerdict } from '../../state/mail/auth-verdict.js';
import { OurAuthResultsFilter, withoutOurAuthResults } from '../../state/mail/auth-results-filter.js';
import { allFromDomains } from '../../state/mail/author-fields.js';
import { hostedDomains } from './hosted-dkim.js';
import { tee } from '../../state/mail/tee.js';
import { spool } from '../../state/mail/spool.js';
import type { InboundStore } from './inbound.store.js';
import type { DnsLookup } from '../../base/net/dns-resolver.js';
import type { InboundEnvelope } from './inbound-envelope.js';
import { reservedIn, type QueuedInbound } from './inbound-queue.store.js';
import { removeStored } from '../intake/intake-queue.store.js';

/**
 * Parsing, verifying and storing a message that arrived on port 25: at once on the direct path,
 * or behind the 250 for a queued one (the worker). Either way through the InboundStore
 * (threading, counters, message.received), with its SPF/DKIM/DMARC verdicts.
 */
export class InboundDelivery {
  constructor(
    private readonly db: Database,
    private readonly blobs: BlobStore,
    private readonly inbound: InboundStore,
    private readonly bus: EventBus,
    private readonly log: Logger,
    private readonly resolver: DnsLookup,
    private readonly options: { hostname: string; group?: CommitGroup | null },
  ) {}

  /**
   * Stores a message accepted on port 25 in every mailbox it reaches: the raw message (with any
   * Authentication-Results of our authserv-id removed) is parsed under the MIME caps and verified
   * (SPF/DKIM/DMARC). Mail whose From names a domain hosted here must carry a valid DKIM signature
   * of that domain by our key (HOSTED_SENDER_UNSIGNED, 550 5.7.1). The stored raw message gets our
   * Authentication-Results (RFC 8601, authserv-id = SMTP_HOSTNAME) and Received (RFC 5321 §4.4)
   * fields on top, as the verdict is only known at the end: a held message is written with that
   * head inside the transaction of its rows; a larger one, streamed as it arrives, is moved by the
   * blob store under its final key behind that head without reading it back (prependAndMove). One
   * copy per distinct mailbox commits in one transaction; a `queued` message leaves the queue in
   * it and settles its quota reservation. Resolves after the commit; on failure nothing stays
   * behind (after a lost database connection, the storage sweeper removes what no row names).
   */
  async deliver(
    envelope: InboundEnvelope,
    source: Buffer | Readable,
    receivedAt: Date,
    queued?: QueuedInbound,
    /** A queued row handed over while its commit was in flight: nothing is written or reported before it settles. */
    committed?: Promise<void>,
  ): Promise<{ messageIds: string[] }> {
    const rawKey = `raw/${newId(ID_PREFIX.message, receivedAt.getTime())}`;
    const arrivingKey = `${rawKey}-arriving`;
    // Small mail comes read whole: one buffer for the store, the parser and the verifier, no tee.
    const [toStore, toParse, toVerify] = Buffer.isBuffer(source) ? [source, source, source] : tee(source, 3);
    const [stored, parsed, verdict] = await Promise.allSettled([
      Buffer.isBuffer(toStore)
        ? { held: withoutOurAuthResults(toStore, this.options.hostname) }
        : spool(throughFilter(toStore!, new OurAuthResultsFilter(this.options.hostname)), SMALL_BLOB_BYTES, (large) =>
            this.blobs.put(arrivingKey, large),
          ),
      parseMime(toParse!, this.blobs),
      verifyAuthentication(
        toVerify!,
        {
          clientAddress: envelope.clientAddress,
          helo: envelope.helo,
          mailFrom: envelope.mailFrom,
          receivedBy: this.options.hostname,
        },
        this.resolver,
      ),
    ]);
    const keys = [
      arrivingKey,
      rawKey,
      ...(parsed.status === 'fulfilled' ? parsed.value.attachments.map((a) => a.blobKey) : []),
    ];
    try {
      // Prepared during the queue row's commit; from here on that row exists (or this throws
      // QueueRowNotWritten, before any error of the preparation: a row never written records none).
      await committed;
      if (stored.status === 'rejected') throw stored.reason;
      if (parsed.status === 'rejected') throw parsed.reason;
      const m = parsed.value;
      const authResults = verdict.status === 'fulfilled' ? verdict.value : null;
      // A queued message's From was not hosted at intake: asked again in its transaction's first
      // batch (no round trip of its own), so a domain hosted since must still be signed.
      if (!queued) await this.requireHostedSignature(m.headerLines, authResults);
      const trace = Buffer.from(
        ourAuthResults(authResults, this.options.hostname) + this.receivedHeader(envelope, rawKey, receivedAt),
      );
      // A small message is stored with its rows, in their transaction (one commit); a large one was
      // streamed under the arriving key and moves behind the trace fields now.
      const spooled = stored.value;
      const rawSizeBytes =
        'held' in spooled
          ? trace.length + spooled.held.length
          : (await this.blobs.prependAndMove(arrivingKey, rawKey, trace)).sizeBytes;
      const mailboxIds = [...new Set(envelope.recipients.map((r) => r.mailboxId))].sort(); // lock order
      const from = m.from[0] ?? { address: isAddress(envelope.mailFrom) ? envelope.mailFrom : '', name: '' };
      const write = async (trx: Sql) => {
        // The raw message goes out with the first copy's statements (one round trip when pipelined).
        const signed = queued ? this.requireHostedSignature(m.headerLines, authResults, trx) : undefined;
        const raw = 'held' in spooled ? this.blobs.putIn(trx, rawKey, Buffer.concat([trace, spooled.held])) : undefined;
        const out: { messageId: string; events: MailboxEvent[] }[] = [];
        const copies = (async () => {
          for (const mailboxId of mailboxIds) {
            out.push(
              await this.inbound.store(
                trx,
                {
                  mailboxId,
                  from: from.address,
                  fromDisplayName: from.name,
                  to: m.to,
                  cc: m.cc,
                  replyTo: m.replyTo,
                  subject: m.subject,
                  bodyText: m.text,
                  bodyHtml: m.html,
                  internetMessageId: m.messageId,
                  inReplyTo: m.inReplyTo,
                  references: m.references,
                  attachments: m.attachments,
                  rawBlobKey: rawKey,
                  rawSizeBytes,
                  receivedAt,
                  sentAt: m.date,
                  authResults: (authResults ?? UNVERIFIED) as unknown as Record<string, unknown>,
                  listUnsubscribe: m.listUnsubscribe,
                  ...(queued ? { reservedBytes: reservedIn(queued, mailboxId) } : {}),
                },
                { whole: true },
              ),
            );
          }
        })();
        // A queued message leaves the queue in the transaction that stores it: exactly once.
        await settleAll([signed, raw, copies, queued ? removeStored(trx, 'inbound_queue', queued) : undefined]);
        return out;
      };
      const group = this.options.group;
      const copies = await (group ? group.run(mailboxIds[0]!, write) : this.db.writeTx(write));
      await this.bus
        .publish(copies.flatMap((c) => c.events))
        .catch((err) => this.log.warn('events.publish_failed', { err }));
      this.log.info('smtp.inbound_delivered', {
        messageIds: copies.map((c) => c.messageId),
        recipients: envelope.recipients.length,
        clientAddress: envelope.clientAddress,
        spf: authResults?.spf.result ?? null,
        dmarc: authResults?.dmarc.result ?? null,
      });
      return { messageIds: copies.map((c) => c.messageId) };
    } catch (err) {
      // After a lost connection the transaction may have committed: keep the blobs then (the
      // storage sweeper removes them if no row names them), never delete what a row may name.
      if (!isStorageUnavailable(err)) await Promise.all(keys.map((k) => this.blobs.delete(k).catch(() => undefined)));
      throw err;
    }
  }

  /**
   * A From in a domain hosted here is only believed with a passing DKIM signature of that very
   * domain (the lookup answers our key for it, see hosted-dkim.ts); every From field and address
   * is checked, so a second From cannot slip a hosted author past a foreign first one.
   */
  private async requireHostedSignature(
    headerLines: readonly { key: string; line: string }[],
    verdict: AuthVerdict | null,
    on?: Sql,
  ): Promise<void> {
    const hosted = await hostedDomains(this.db, allFromDomains(headerLines), on);
    const signed = new Set(
      (verdict?.dkim ?? []).filter((d) => d.result === 'pass' && d.domain).map((d) => d.domain!.toLowerCase()),
    );
    const unsigned = hosted.filter((d) => !signed.has(d));
    if (unsigned.length) {
      this.log.info('smtp.hosted_sender_unsigned', { domains: unsigned });
      throw new AppError('HOSTED_SENDER_UNSIGNED');
    }
  }

  /** RFC 5321 §4.4 trace header: who connected, as whom, to which host, when. */
  private receivedHeader(e: InboundEnvelope, id: string, at: Date): string {
    const forClause = e.recipients.length === 1 ? `\r\n\tfor <${e.recipients[0]!.address}>` : '';
    const date = at.toUTCString().replace(/GMT$/, '+0000');
    return `Received: from ${e.helo || 'unknown'} ([${e.clientAddress}])\r\n\tby ${this.options.hostname} with ${e.tls ? 'ESMTPS' : 'ESMTP'} id ${id.slice(4)}${forClause};\r\n\t${date}\r\n`;
  }
}

/** The verdict when verification itself failed to run: nothing passed. */
const UNVERIFIED: AuthVerdict = {
  spf: { result: 'temperror', domain: null },
  dkim: [],
  dmarc: { result: 'temperror', domain: null, policy: null },
  headers: '',
};

/**
 * Our Authentication-Results field (RFC 8601 §2.2), authserv-id first: mailauth's own when it
 * produced one, else one stating the temporary error.
 */
function ourAuthResults(verdict: AuthVerdict | null, authservId: string): string {
  const own = (verdict?.headers ?? '')
    .split(/\r?\n(?=[^ \t])/)
    .filter((f) => /^authentication-results\s*:/i.test(f))
    .map((f) => f.replace(/\r?\n/g, '\r\n'));
  if (own.length) return own.map((f) => `${f.replace(/\r\n$/, '')}\r\n`).join('');
  return `Authentication-Results: ${authservId}; spf=temperror; dkim=temperror; dmarc=temperror\r\n`;
}

/**
 * `source` piped through `filter`: a failure of either destroys both, so a store that gives up
 * closes its tee branch too (tee then drains the source; the sender never stalls).
 */
function throughFilter(source: Readable, filter: OurAuthResultsFilter): Readable {
  return pipeline(source, filter, () => undefined);
}
