import { ID_PREFIX, newId } from '../../base/ids.js';
import { holdStartedAt } from '../policy/approval.store.js';
import type { BaseServices } from '../../base/services.js';
import { PollingLoop } from '../../base/loops/polling-loop.js';
import { jsonValue } from '../../../storage/database.js';
import { isStorageUnavailable } from '../../../storage/errors.js';
import type { FlowServices } from '../services.js';
import { routeRecipient } from '../delivery/recipient-routing.js';
import { ownAddresses } from '../sending/outbound.store.js';
import { policyOf } from '../policy/policy.store.js';
import type { ApprovalLinkStore, ClaimedNotice, HeldMessageRow } from '../policy/approval-link.store.js';
import { transferForm, type TransferDeps, type TransferMessage } from './external-delivery.js';
import type { ExternalTransport } from './external-transport.js';
import { isSimulated, simulatorTransport } from './simulator-transport.js';
import { DEFAULT_RETRY, retryDelayMs, type RetryPolicy } from './retry.js';
import { approvalPageUrl, noticeMessage } from './approval-notice.js';

export interface ApprovalNoticeWorkerOptions {
  workerId: string;
  pollIntervalMs: number;
  leaseMs: number;
  /** APPROVAL_TTL: the hold's expiry, and the link's. */
  ttlMs: number;
  /** PUBLIC_BASE_URL (else the server's own address): where the approval page is. */
  publicBaseUrl: string;
  retry?: RetryPolicy;
}

/** Without an external transport the notice waits, like any external recipient. */
const EXTERNAL_WAIT_MS = 10 * 60_000;

type Outcome =
  | { kind: 'sent' }
  | { kind: 'failed' | 'skipped'; reason: string }
  | { kind: 'later'; afterMs: number; reason: string };

/**
 * Mails each pending approval notice (docs/workflow.md, "Approval links"): claims it under a lease,
 * mints the link's credential for this attempt and delivers the notice the way mail to that
 * address goes: into the approver's mailbox when it is hosted here (local delivery, through the
 * inbound store), else through the configured external transport (relay or MX, DKIM-signed, the
 * simulator for simulator.invalid), retried with backoff while deferred. The notice never passes
 * the outbound policy (it is the service's mail, not the mailbox's), so it is never held and never
 * announces itself; it goes out with a null reverse-path, so no bounce of it comes back.
 * A notice whose message is no longer held, or whose address is no longer an approver (or is one
 * of the mailbox's own), is skipped.
 */
export class ApprovalNoticeWorker {
  private readonly loop: PollingLoop;

  constructor(
    private readonly services: BaseServices & Pick<FlowServices, 'inbound' | 'transport' | 'approvalLinkStore'>,
    private readonly options: ApprovalNoticeWorkerOptions,
  ) {
    this.loop = new PollingLoop(() => this.runOnce(), {
      intervalMs: options.pollIntervalMs,
      onError: (err) => services.log.warn('approval_notice.poll_failed', { err }),
      wakeOn: (kick) =>
        services.bus.subscribe((event) => {
          if (event.type === 'message.approval-required') kick();
        }),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Claims and mails one due notice; false when none was due. */
  async runOnce(): Promise<boolean> {
    const { clock, log } = this.services;
    const store: ApprovalLinkStore = this.services.approvalLinkStore;
    const notice = await store.claimNotice(this.options.workerId, this.options.leaseMs, clock.now());
    if (!notice) return false;
    let outcome: Outcome;
    try {
      outcome = await this.process(notice);
    } catch (err) {
      if (isStorageUnavailable(err)) throw err;
      log.warn('approval_notice.failed_attempt', { messageId: notice.messageId, attempts: notice.attempts, err });
      outcome = {
        kind: 'later',
        afterMs: retryDelayMs(notice.attempts, this.options.retry ?? DEFAULT_RETRY),
        reason: err instanceof Error ? err.message : String(err),
      };
    }
    const now = clock.now();
    const id = this.options.workerId;
    if (outcome.kind === 'later')
      await store.postponeNotice(notice, id, new Date(now.getTime() + outcome.afterMs), outcome.reason);
    else await store.finishNotice(notice, id, outcome.kind, outcome.kind === 'sent' ? null : outcome.reason, now);
    log.info('approval_notice.processed', {
      messageId: notice.messageId,
      outcome: outcome.kind,
      ...(outcome.kind === 'sent' ? {} : { reason: outcome.reason }),
    });
    return true;
  }

  private async process(notice: ClaimedNotice): Promise<Outcome> {
    const { db, clock } = this.services;
    const now = clock.now();
    const message = await this.services.approvalLinkStore.heldMessage(notice.messageId);
    if (!message || message.approval_status !== 'pending' || message.deleted_at !== null || !message.enabled)
      return { kind: 'skipped', reason: 'the message is no longer held' };
    const expiresAt = new Date(holdStartedAt(message).getTime() + this.options.ttlMs);
    if (expiresAt.getTime() <= now.getTime())
      return { kind: 'failed', reason: 'the hold expired before the notice could be delivered' };
    if (!policyOf(jsonValue(message.policy)).approverAddresses.includes(notice.approverAddress))
      return { kind: 'skipped', reason: 'no longer an approver of the mailbox' };
    // Also refused when the policy is set; checked again here for a manifest's policy and later aliases.
    if ((await ownAddresses(db, message.mailbox_id)).has(notice.approverAddress))
      return { kind: 'skipped', reason: 'an address of the held mailbox itself' };
    const credential = await this.services.approvalLinkStore.mint(notice, this.options.workerId, expiresAt);
    if (!credential) return { kind: 'later', afterMs: 0, reason: 'lease lost' };
    const mail = noticeMessage({
      message,
      approverAddress: notice.approverAddress,
      url: approvalPageUrl(this.options.publicBaseUrl, credential),
      expiresAt,
      hostname: this.services.transport.hostname,
      at: now,
    });
    const route = await routeRecipient(db, notice.approverAddress, now);
    if (route.kind === 'local') return this.deliverLocally(mail, route.mailboxId);
    if (route.kind === 'unknown-local') return { kind: 'failed', reason: '550 5.1.1 No such mailbox here' };
    const transport = isSimulated(notice.approverAddress)
      ? simulatorTransport(db, notice.messageId)
      : this.services.transport.external;
    if (!transport) return { kind: 'later', afterMs: EXTERNAL_WAIT_MS, reason: 'external delivery not configured' };
    return this.deliverExternally(mail, transport, notice, message);
  }

  /** Into the approver's hosted mailbox, raw source kept, exempt from its quota like a bounce. */
  private async deliverLocally(mail: TransferMessage, mailboxId: string): Promise<Outcome> {
    const { blobs, inbound, clock } = this.services;
    const raw = (await transferForm(this.deps(null), mail, mail.to, clock.now())).raw;
    const rawKey = `raw/${newId(ID_PREFIX.message, clock.now().getTime())}`;
    const { sizeBytes } = await blobs.put(rawKey, raw);
    try {
      await inbound.store(undefined, {
        mailboxId,
        from: mail.fromAddress,
        fromDisplayName: mail.fromDisplayName,
        to: mail.to,
        subject: mail.subject,
        bodyText: mail.bodyText,
        bodyHtml: null,
        internetMessageId: mail.internetMessageId,
        inReplyTo: null,
        references: [],
        receivedAt: clock.now(),
        sentAt: mail.sentAt,
        rawBlobKey: rawKey,
        rawSizeBytes: sizeBytes,
        quotaExempt: true,
      });
    } catch (err) {
      if (!isStorageUnavailable(err)) await blobs.delete(rawKey).catch(() => undefined);
      throw err;
    }
    return { kind: 'sent' };
  }

  private async deliverExternally(
    mail: TransferMessage,
    transport: ExternalTransport,
    notice: ClaimedNotice,
    message: HeldMessageRow,
  ): Promise<Outcome> {
    const outgoing = await transferForm(this.deps(transport), mail, mail.to, this.services.clock.now());
    const [outcome] = await transport.deliver('', mail.to, outgoing);
    if (!outcome || outcome.status === 'deferred')
      return {
        kind: 'later',
        afterMs: retryDelayMs(notice.attempts, this.options.retry ?? DEFAULT_RETRY),
        reason: outcome?.reply ?? 'no answer',
      };
    if (outcome.status === 'failed') return { kind: 'failed', reason: outcome.reply };
    this.services.log.info('approval_notice.sent', { messageId: message.id, route: transport.route });
    return { kind: 'sent' };
  }

  private deps(transport: ExternalTransport | null): TransferDeps {
    const s = this.services;
    return {
      db: s.db,
      blobs: s.blobs,
      inbound: s.inbound,
      dkim: s.transport.dkim,
      transport,
      hostname: s.transport.hostname,
      maxAgeMs: this.options.ttlMs,
      log: s.log,
    };
  }
}
