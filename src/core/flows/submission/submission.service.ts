import type { Readable } from 'node:stream';
import { AppError } from '../../base/errors.js';
import { assertRecipientCap } from '../delivery/recipient-cap.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import { isAddress, normalizeAddress } from '../../base/address.js';
import type { Logger } from '../../base/logger.js';
import type { Clock } from '../../base/time.js';
import type { MailboxRef } from '../../access/principal.js';
import type { TokenAuthenticator } from '../../access/token-authenticator.js';
import { settleAll, type Database, type Sql } from '../../../storage/database.js';
import type { CommitGroup } from '../../../storage/commit-group.js';
import { deleteUnclaimedAttachments } from '../../state/attachments/attachment.store.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import { SMALL_BLOB_BYTES, type BlobStore } from '../../../storage/blobs/blob-store.js';
import { parseMime, replyHeaders, type ParsedMessage } from '../../state/mail/mime-parse.js';
import { checkMimeStructure } from '../../state/mail/mime-caps.js';
import { topHeaderLines } from '../../state/mail/raw-headers.js';
import { reservationFor } from '../../state/quota/storage-quota.store.js';
import { observability } from '../../base/observability.js';
import { findParentByMessageIds, inboundReferences } from '../delivery/threading.js';
import type { OutboundDraft } from '../sending/outbound.store.js';
import { enqueueSubmission, type QueuedSubmission, type SubmissionRow } from './submission-queue.store.js';
import { COMMIT_WITH_QUEUE_ROW, removeStored } from '../intake/intake-queue.store.js';
import { LocalHandoff } from '../intake/local-handoff.js';
import { tee } from '../../state/mail/tee.js';
import { heldIfSmall, spool } from '../../state/mail/spool.js';
import { authorFields } from '../../state/mail/author-fields.js';
import type { SendService } from '../sending/send.service.js';
import type { SendAccepted } from '../sending/send.schemas.js';
import {
  areActiveIdentities,
  senderAtMailFrom,
  submissionMailbox,
  type SenderAtMailFrom,
} from './sender-identity.store.js';
import { SenderReadCache } from './sender-read-cache.js';
import { envelopeRecipients, submittedDraft, stageAttachments } from './submitted-draft.js';
import type { OutboundPolicy, SendActor, TransactionRules } from '../policy/outbound-policy.js';
import type { FlowOutcome, IntakeFlow } from '../intake/intake-flow.js';

/** Who may submit on this SMTP session: the mailbox the AUTH username resolved to. */
export interface Submitter {
  tokenId: string;
  username: string;
  mailbox: MailboxRef;
}

export interface SubmissionEnvelope {
  mailFrom: string;
  rcptTo: readonly string[];
}

/**
 * SMTP submission (port 587) as core use cases. The channel parses the protocol and calls one
 * method per command; the spec's SMTP rules, the identity rule and the shared send path
 * (rate limit, storage, outbox, events) all live here or below, never in the channel.
 */
export class SubmissionService {
  constructor(
    private readonly db: Database,
    private readonly tokens: TokenAuthenticator,
    private readonly sending: SendService,
    private readonly blobs: BlobStore,
    private readonly log: Logger,
    private readonly options: {
      maxRecipients: number;
      group?: CommitGroup | null;
      /** Queue held messages for the worker behind the 250 (SMTP_SUBMISSION_QUEUE). */
      queue: boolean;
      /** How long a session's MAIL FROM read is reused (AUTH_CACHE_TTL; 0: never). */
      senderCacheMs: number;
      /** Flow control by the queue's depth (intake-flow.ts); none without the queue. */
      flow?: IntakeFlow | null;
    },
    private readonly policy: OutboundPolicy,
    private readonly clock: Clock,
  ) {
    this.senderReads = new SenderReadCache(options.senderCacheMs);
  }

  /**
   * The token and client address each session authenticated with, for the per-transaction
   * re-check. Kept here rather than on the Submitter so the plaintext never sits in an object the
   * channel holds, logs or serialises; the entry goes with the session's Submitter.
   */
  private readonly credentials = new WeakMap<Submitter, { token: string; clientAddress: string }>();

  /**
   * The policy of each session's transaction in progress, read with its MAIL FROM (one transaction
   * at a time per session; the next MAIL FROM replaces it), for its RCPT TO commands.
   */
  private readonly transactionRules = new WeakMap<Submitter, TransactionRules>();

  /** Whether each session's mailbox has a storage quota, read at its MAIL FROM (a queued message reserves only then). */
  private readonly quotaLimited = new WeakMap<Submitter, boolean>();

  /** Queued submissions go to this process's worker (IntakeQueueWorker) after their commit. */
  readonly handoff = new LocalHandoff<QueuedSubmission>();

  /** MAIL FROM's read per session, reused for AUTH_CACHE_TTL (sender-read-cache.ts). */
  private readonly senderReads: SenderReadCache<Submitter>;

  /**
   * AUTH PLAIN/LOGIN: username = an active sender identity, password = a mailbox or domain token
   * (spec, Presenting credentials). Every rule violation is the same UNAUTHENTICATED (535 5.7.8)
   * and costs the client address one point of the shared failure budget (a bad token is counted
   * by TokenAuthenticator.authenticate, the other refusals here); past the budget a failed AUTH
   * answers AUTH_THROTTLED (454 4.7.0), while good credentials still get 235 (docs/contract.md,
   * "Authentication under shared addresses"). An unreachable database is AUTH_UNAVAILABLE (454).
   */
  async authenticate(username: string, password: string, clientAddress: string): Promise<Submitter> {
    const throttle = this.tokens.throttle;
    try {
      const address = normalizeAddress(username);
      const refuse = (detail: string) => throttle.refuse(clientAddress, new AppError('UNAUTHENTICATED', detail));
      if (!isAddress(address)) return await refuse('The username is not an address.');
      if (!password) return await refuse('Missing access token.');
      // A typed password (the login one, say) is not token-shaped: say what is expected instead.
      if (!/^mbx[md]_/.test(password))
        return await throttle.refuse(clientAddress, new AppError('SMTP_PASSWORD_NOT_TOKEN'));
      const principal = await this.tokens.authenticate(password, clientAddress);
      const mailbox = principal.scopes.has('MailboxSend')
        ? await submissionMailbox(this.db, principal, address)
        : undefined;
      if (!mailbox) return await refuse('The username is not a sender identity this token may use.');
      const submitter: Submitter = { tokenId: principal.tokenId, username: address, mailbox };
      this.credentials.set(submitter, { token: password, clientAddress });
      return submitter;
    } catch (err) {
      if (!(err instanceof AppError)) {
        if (isStorageUnavailable(err)) throw new AppError('AUTH_UNAVAILABLE', undefined, { cause: err });
        throw err;
      }
      this.log.info('smtp.auth_failed', { clientAddress, reason: err.message });
      throw err;
    }
  }

  /**
   * The session's token must still be valid for every transaction, not only at AUTH: a token
   * disabled, deleted or expired (or its mailbox or domain disabled) stops an open session at its
   * next MAIL FROM and at end of DATA. Through the same cached authenticate as every channel, so
   * a token disabled on another replica is refused within AUTH_CACHE_TTL.
   */
  private async recheck(submitter: Submitter): Promise<void> {
    const credential = this.credentials.get(submitter);
    if (!credential) throw new AppError('AUTH_REQUIRED');
    try {
      await this.tokens.authenticate(credential.token, credential.clientAddress);
    } catch (err) {
      if (err instanceof AppError && err.code === 'UNAUTHENTICATED') {
        this.log.info('smtp.session_token_revoked', {
          tokenId: submitter.tokenId,
          clientAddress: credential.clientAddress,
          reason: err.message,
        });
        throw new AppError('AUTH_REQUIRED', 'The access token of this session is no longer valid; authenticate again.');
      }
      // A storage outage stays what it is (451 4.3.0 at MAIL FROM or end of DATA), as without the re-check.
      throw err;
    }
  }

  /** Before MAIL FROM is answered: waits while the submission queue is over its high water (intake-flow.ts). */
  admit(): Promise<FlowOutcome> {
    return this.options.flow?.admit() ?? Promise.resolve('open');
  }

  /** MAIL FROM: the session's token is still valid and the envelope sender is an active identity of its mailbox. */
  async checkSender(submitter: Submitter | null, mailFrom: string): Promise<void> {
    if (!submitter) throw new AppError('AUTH_REQUIRED');
    await this.recheck(submitter);
    const address = normalizeAddress(mailFrom);
    if (!isAddress(address)) throw new AppError('SENDER_NOT_IDENTITY');
    this.transactionRules.delete(submitter);
    // One statement for all three: the identity, a mailbox already at its quota (the sender's copy
    // is stored here), refused now (552 5.2.2), and the policy this transaction's RCPT TO judge by.
    const sender = await this.senderAt(submitter, address);
    if (!sender.identity) throw new AppError('SENDER_NOT_IDENTITY');
    if (sender.full) throw new AppError('QUOTA_EXCEEDED');
    this.transactionRules.set(submitter, this.policy.rulesOf(sender.layers));
    this.quotaLimited.set(submitter, sender.limited);
  }

  /** MAIL FROM's one statement, or the session's read of the same address within AUTH_CACHE_TTL. */
  private async senderAt(submitter: Submitter, address: string): Promise<SenderAtMailFrom> {
    const cached = this.senderReads.get(submitter, address);
    if (cached) return cached;
    const readAt = performance.now();
    const read = await senderAtMailFrom(this.db, submitter.mailbox.id, submitter.tokenId, address);
    this.senderReads.remember(submitter, address, read, readAt);
    return read;
  }

  /**
   * RCPT TO: any syntactically valid address (an authenticated sender may write to anyone), up to
   * MAX_RECIPIENTS per transaction, the limit HTTP sends have too. Returns the normalized address.
   */
  checkRecipient(address: string, alreadyAccepted: number): string {
    assertRecipientCap(alreadyAccepted + 1, this.options.maxRecipients, 'RCPT TO');
    const normalized = normalizeAddress(address);
    if (!isAddress(normalized)) throw new AppError('MAILBOX_ADDRESS_INVALID');
    return normalized;
  }

  /**
   * RCPT TO under the outbound policy (docs/api.md, "Outbound policy"): the syntax and count
   * checks above, then the one policy decision for this recipient given those already accepted,
   * by the rules read at this transaction's MAIL FROM; a refusal is `550 5.7.1` for this recipient
   * only (RFC 5321 §4.1.1.3), the others stand. End of DATA decides again on rules read then.
   */
  async checkPolicyRecipient(submitter: Submitter | null, address: string, accepted: readonly string[]) {
    if (!submitter) throw new AppError('AUTH_REQUIRED');
    const normalized = this.checkRecipient(address, accepted.length);
    await this.policy.checkRecipient(
      smtpActor(submitter),
      submitter.mailbox,
      normalized,
      accepted.map(normalizeAddress),
      this.transactionRules.get(submitter),
    );
    return normalized;
  }

  /**
   * DATA. Resolves only after a commit, so 250 means durable. With queued submission
   * (SMTP_SUBMISSION_QUEUE, the default) a held message is decided in full first (`decide`: MIME
   * caps, the From and Sender identities, the token, the outbound policy, the reply budget and
   * rate limit) and written to the submission queue in one commit with its quota reservation; the
   * worker writes the message behind the 250 (`storeQueued`) under the id the 250 names. Where the
   * reservation does not fit, the decided message is stored before the 250 with the exact charge;
   * a message too large to hold takes the direct path (docs/api.md, "Queued intake").
   * `envelope.mailFrom` is the sender `checkSender` accepted for this transaction (the channel
   * keeps the envelope of a MAIL FROM it answered 250 only).
   */
  async accept(submitter: Submitter, envelope: SubmissionEnvelope, raw: Readable): Promise<SubmissionAccepted> {
    try {
      return await this.acceptOnce(submitter, envelope, raw);
    } catch (err) {
      // Refused (quota, identity, policy...): the next MAIL FROM reads its sender afresh.
      this.senderReads.forget(submitter);
      throw err;
    }
  }

  private async acceptOnce(
    submitter: Submitter,
    envelope: SubmissionEnvelope,
    raw: Readable,
  ): Promise<SubmissionAccepted> {
    // Small mail is read whole first: one buffer for the store and the parser, no tee (nothing
    // is stored yet if the channel's guard refuses it meanwhile).
    const source = await heldIfSmall(raw, SMALL_BLOB_BYTES);
    if (!this.options.queue || !Buffer.isBuffer(source)) return this.store(submitter, envelope, source);
    const decided = await this.decide(submitter, envelope, source);
    return (
      (await this.enqueue(decided)) ??
      // Decided once: stored now under the same id and verdict, its rate limit not spent again.
      this.writeDecided(decided, { writeWithin: (writeRaw) => writeRaw })
    );
  }

  /** Writes a queued submission the worker claimed, as decided before its 250 (the row goes in the same commit). */
  storeQueued(q: QueuedSubmission): Promise<SendAccepted> {
    return this.writeDecided(q, {
      // The queue row leaves in the transaction that writes the message: exactly once.
      writeWithin: (writeRaw) => async (trx) =>
        void (await settleAll([removeStored(trx, 'submission_queue', q), writeRaw?.(trx)])),
      reservedBytes: q.reservedBytes > 0 ? q.reservedBytes : undefined,
      // Its 250 was given while the mailbox had no quota (none reserved): counted, never refused
      // behind the 250 by a quota set since (a refusal could no longer reach the client).
      quotaExempt: q.reservedBytes === 0,
    });
  }

  /**
   * The decisions of end of DATA on a held message, made once, before its 250, whichever way it is
   * then stored: what its queue row (or its direct write) carries.
   */
  private async decide(submitter: Submitter, envelope: SubmissionEnvelope, raw: Buffer): Promise<SubmissionRow> {
    const receivedAt = this.clock.now();
    await checkMimeStructure(raw);
    const headerLines = topHeaderLines(raw);
    await this.checkAuthors(submitter, envelope, headerLines);
    await this.recheck(submitter); // again at end of DATA: a transfer may outlast the token
    const recipients = envelopeRecipients(envelope);
    const parent = headerLines.some((h) => h.key === 'in-reply-to' || h.key === 'references')
      ? await this.replyParent(submitter.mailbox.id, raw)
      : undefined;
    const verdict = await this.sending.admit(smtpActor(submitter), submitter.mailbox, {
      recipients,
      parentId: parent?.id ?? null,
    });
    const { id, address, domainId, displayName, sendRateLimitPerMinute } = submitter.mailbox;
    return {
      id: newId(ID_PREFIX.message, receivedAt.getTime()),
      receivedAt,
      mailbox: { id, address, domainId, displayName, sendRateLimitPerMinute },
      tokenId: submitter.tokenId,
      mailFrom: normalizeAddress(envelope.mailFrom),
      recipients,
      verdict,
      traceContext: observability().currentTraceparent(),
      reservedBytes: this.quotaLimited.get(submitter) === false ? 0 : reservationFor(raw.length),
      raw,
    };
  }

  /**
   * The queue row of a decided message, with its quota reservation, in one commit; null when the
   * reservation does not fit (near its quota: the exact charge of `writeDecided` refuses only
   * what really does not fit).
   */
  private async enqueue(row: SubmissionRow): Promise<SubmissionAccepted | null> {
    try {
      const group = this.options.group;
      // Grouped by the mailbox, like its other writes.
      await this.handoff.write(
        (claim) =>
          group
            ? group.run(row.mailbox.id, (trx) => enqueueSubmission(trx, row, claim), COMMIT_WITH_QUEUE_ROW)
            : this.db.writeTx((trx) => enqueueSubmission(trx, row, claim), COMMIT_WITH_QUEUE_ROW),
        (claim) => ({ ...row, ...claim, attempts: 1 }),
      );
    } catch (err) {
      if (err instanceof AppError && err.code === 'QUOTA_EXCEEDED') return null;
      throw err;
    }
    this.log.info('smtp.submission_queued', {
      messageId: row.id,
      mailboxId: row.mailbox.id,
      recipients: row.recipients.length,
    });
    return { messageId: row.id, status: row.verdict.hold ? 'pending_approval' : 'queued' };
  }

  /**
   * Writes a decided message (the worker's queued row, or one whose reservation did not fit) with
   * its verdict, under its id and at the time of its end of DATA.
   */
  private writeDecided(
    row: SubmissionRow,
    how: {
      writeWithin: (writeRaw: WriteStep | undefined) => WriteStep | undefined;
      reservedBytes?: number | undefined;
      quotaExempt?: boolean;
    },
  ): Promise<SendAccepted> {
    const envelope = { mailFrom: row.mailFrom, rcptTo: row.recipients };
    return this.parseAndWrite(row.mailbox, envelope, row.raw, `raw/${row.id}`, {
      commit: (draft, writeRaw) =>
        this.sending.write({ tokenId: row.tokenId, channel: 'smtp' }, row.mailbox, draft, row.verdict, {
          at: row.receivedAt,
          messageId: row.id,
          reservedBytes: how.reservedBytes,
          quotaExempt: how.quotaExempt,
          traceContext: row.traceContext,
          writeWithin: how.writeWithin(writeRaw),
          group: this.options.group,
        }),
    });
  }

  /** The message of the mailbox a submission replies to, read from its header section alone. */
  private async replyParent(mailboxId: string, raw: Buffer) {
    const { inReplyTo, references } = await replyHeaders(raw, this.blobs);
    return findParentByMessageIds(this.db.db, mailboxId, inboundReferences(inReplyTo, references));
  }

  /**
   * The From header, the Sender header and the envelope sender, all identities of the mailbox.
   * The envelope sender was read at this transaction's MAIL FROM (checkSender; a deactivated
   * identity is refused at the next one), so a message whose headers name only it needs no
   * query; any other address is read now, with it, in one query.
   */
  private async checkAuthors(
    submitter: Submitter,
    envelope: SubmissionEnvelope,
    headerLines: readonly { key: string; line: string }[],
  ): Promise<void> {
    const author = authorFields(headerLines);
    const mailFrom = normalizeAddress(envelope.mailFrom);
    const others = [author.from, ...(author.sender ? [author.sender] : [])].filter((a) => a !== mailFrom);
    if (
      !isAddress(mailFrom) ||
      (others.length > 0 && !(await areActiveIdentities(this.db, submitter.mailbox.id, [mailFrom, ...others])))
    )
      throw new AppError('SENDER_NOT_IDENTITY');
  }

  /**
   * The direct path: stores the raw message and its parts while they arrive, checks the authors
   * and the token, then SendService.submit (policy, rate limit, one transaction for message,
   * recipients, outbox job and event).
   */
  private store(submitter: Submitter, envelope: SubmissionEnvelope, source: Buffer | Readable): Promise<SendAccepted> {
    return this.parseAndWrite(submitter.mailbox, envelope, source, `raw/${newId(ID_PREFIX.message)}`, {
      check: async (message) => {
        await this.checkAuthors(submitter, envelope, message.headerLines);
        await this.recheck(submitter); // again at end of DATA: a transfer may outlast the token
      },
      // The whole-message policy decision again at end of DATA (headers: reply parent, approval).
      commit: (draft, writeWithin) =>
        this.sending.submit(smtpActor(submitter), submitter.mailbox, draft, { writeWithin, group: this.options.group }),
    });
  }

  /**
   * Parses `source` while storing it under `rawKey` (a small message is held, to be written by
   * `commit` in its transaction), runs `check`, stages the attachments, builds the OutboundDraft
   * and hands it to `commit`. Nothing stays behind on failure (after a lost database connection,
   * the storage sweeper removes what no row names).
   */
  private async parseAndWrite(
    mailbox: MailboxRef,
    envelope: SubmissionEnvelope,
    source: Buffer | Readable,
    rawKey: string,
    steps: {
      check?: (message: ParsedMessage) => Promise<void>;
      commit: (draft: OutboundDraft, writeRaw: WriteStep | undefined) => Promise<SendAccepted>;
    },
  ): Promise<SendAccepted> {
    const [toStore, toParse] = Buffer.isBuffer(source) ? [source, source] : tee(source, 2);
    const [stored, parsed] = await Promise.allSettled([
      spool(toStore!, SMALL_BLOB_BYTES, (large) => this.blobs.put(rawKey, large)),
      parseMime(toParse!, this.blobs),
    ]);
    const keys = [rawKey, ...(parsed.status === 'fulfilled' ? parsed.value.attachments.map((a) => a.blobKey) : [])];
    let staged: string[] = [];
    try {
      if (stored.status === 'rejected') throw stored.reason;
      if (parsed.status === 'rejected') throw parsed.reason;
      const message = parsed.value;
      await steps.check?.(message);
      staged = await stageAttachments(this.db, mailbox.id, message.attachments);
      const spooled = stored.value;
      const draft = await submittedDraft(this.db, mailbox, envelope, message, {
        rawKey,
        rawSizeBytes: 'held' in spooled ? spooled.held.length : spooled.stored.sizeBytes,
        attachmentIds: staged,
      });
      // A small raw message commits with its row (one transaction, one WAL flush).
      const writeRaw =
        'held' in spooled ? async (trx: Sql) => void (await this.blobs.putIn(trx, rawKey, spooled.held)) : undefined;
      return await steps.commit(draft, writeRaw);
    } catch (err) {
      if (staged.length) await deleteUnclaimedAttachments(this.db.db, staged).catch(() => undefined);
      // A connection lost during the send transaction leaves its outcome unknown (the COMMIT may
      // have landed): the blobs stay, and the storage sweeper removes them if no row names them.
      if (!isStorageUnavailable(err)) await Promise.all(keys.map((k) => this.blobs.delete(k).catch(() => undefined)));
      throw err;
    }
  }
}

/** What the 250 at end of DATA names: the message id, and whether it is held for approval. */
export type SubmissionAccepted = Pick<SendAccepted, 'messageId' | 'status'>;

/** A statement issued inside the write transaction (the raw message, the queue row's delete). */
type WriteStep = (trx: Sql) => Promise<void>;

const smtpActor = (submitter: Submitter): SendActor => ({ tokenId: submitter.tokenId, channel: 'smtp' });
