import { AppError } from '../../base/errors.js';
import { toTs, type Clock } from '../../base/time.js';
import { jsonValue, type Database, type Sql } from '../../../storage/database.js';
import type { AuthThrottle } from '../../access/auth-throttle.js';
import type { ApprovalCredentials } from '../../access/approval-credential.js';
import { attachmentsOfMessage } from '../../state/attachments/attachment.store.js';
import { htmlToText } from '../../state/extraction/html-text.js';
import type { ApprovalService } from './approval.service.js';
import type { ApprovalResult } from './approval.schemas.js';
import { policyOf } from './policy.store.js';
import type { ApprovalLinkStore, HeldMessageRow, LinkRow } from './approval-link.store.js';
import {
  APPROVAL_VIEW_BODY_CHARS,
  type ApprovalLinkDecisionInput,
  type ApprovalLinkInput,
  type ApprovalLinkView,
} from './approval-link.schemas.js';

interface OpenLink {
  link: LinkRow;
  message: HeldMessageRow;
}

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : 'an unknown time');

/**
 * The approval page's two calls, without a bearer token (docs/workflow.md, "Approval links"): a
 * link is its own credential, checked here in this order:
 * 1. its signature (ApprovalCredentials.open: constant time, no storage read), then its row by
 *    the signed message id and the secret's hash; a failure of either is 404 APPROVAL_LINK_INVALID
 *    and costs the client address a point of the credential-failure budget (AuthThrottle), as a
 *    wrong token or password does, so guessing is throttled like login;
 * 2. its message live in an enabled mailbox (else invalid too), the link unused (410 USED), not
 *    past the hold's expiry (410 EXPIRED), its address still one of the mailbox's approvers
 *    (403 REVOKED).
 * The decision is the approval gate's own (ApprovalService.decideThroughLink): the same
 * transaction as a token's, audited in the approver's name on channel `approval-link`, with the
 * link spent inside it. It can only ever act on the link's own message, in the link's mailbox.
 */
export class ApprovalLinkService {
  constructor(
    private readonly db: Database,
    private readonly store: ApprovalLinkStore,
    private readonly approvals: ApprovalService,
    private readonly credentials: ApprovalCredentials,
    private readonly throttle: AuthThrottle,
    private readonly clock: Clock,
  ) {}

  /** What the page shows: the held message as text, why it was held, and whether it is still undecided. */
  async view(input: ApprovalLinkInput, remoteIp: string | null): Promise<ApprovalLinkView> {
    const { link, message } = await this.open(input.credential, remoteIp);
    const attachments = await attachmentsOfMessage(this.db.db, message.id);
    const body = message.body_text ?? (message.body_html ? htmlToText(message.body_html) : '');
    return {
      messageId: message.id,
      mailboxAddress: message.mailbox_address,
      approverAddress: link.approver_address,
      subject: message.subject,
      fromAddress: message.from_address,
      fromDisplayName: message.from_display_name ?? '',
      toAddresses: message.to_addresses,
      ccAddresses: message.cc_addresses,
      bccAddresses: message.bcc_addresses,
      bodyText: body.slice(0, APPROVAL_VIEW_BODY_CHARS),
      bodyTruncated: body.length > APPROVAL_VIEW_BODY_CHARS,
      attachments: attachments.map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        sizeBytes: a.sizeBytes,
      })),
      rule: message.rule,
      reason: message.reason,
      tokenName: message.token_name,
      heldAtTs: toTs(message.created_at)!,
      expiresAtTs: toTs(link.expires_at)!,
      approvalStatus: message.approval_status ?? 'pending',
      decidedAtTs: toTs(message.approval_decided_at),
    };
  }

  /** Approve or reject through the link: once, while the message is held and the link unexpired. */
  async decide(input: ApprovalLinkDecisionInput, remoteIp: string | null): Promise<ApprovalResult> {
    const { link, message } = await this.open(input.credential, remoteIp);
    if (message.approval_status !== 'pending') throw decidedElsewhere(message);
    const result = await this.approvals.decideThroughLink(
      { mailboxId: link.mailbox_id, messageId: link.message_id, approverAddress: link.approver_address },
      input.decision === 'approve' ? 'approved' : 'rejected',
      input.reason ?? null,
      (trx, at) => this.spend(trx, link, at),
    );
    if (result) return result;
    // No longer pending: a concurrent request with this link came first, or another decision did.
    if ((await this.store.usedAt(link.message_id, link.approver_address))?.used_at)
      throw new AppError('APPROVAL_LINK_USED');
    const now = await this.store.heldMessage(link.message_id);
    throw now ? decidedElsewhere(now) : new AppError('APPROVAL_LINK_INVALID');
  }

  private async spend(trx: Sql, link: LinkRow, at: Date): Promise<void> {
    const outcome = await this.store.spend(trx, link.message_id, link.approver_address, at);
    if (outcome === 'used') throw new AppError('APPROVAL_LINK_USED');
    if (outcome === 'expired') throw new AppError('APPROVAL_LINK_EXPIRED');
  }

  private async open(credential: string, remoteIp: string | null): Promise<OpenLink> {
    const opened = this.credentials.open(credential);
    const link = opened ? await this.store.link(opened) : undefined;
    if (!link) return this.refuse(remoteIp);
    const message = await this.store.heldMessage(link.message_id);
    if (!message || !message.enabled || message.deleted_at !== null || message.mailbox_id !== link.mailbox_id)
      throw new AppError('APPROVAL_LINK_INVALID');
    if (link.used_at)
      throw new AppError(
        'APPROVAL_LINK_USED',
        `This approval link was already used, at ${iso(link.used_at)}; each link decides once.`,
      );
    if (!link.expires_at || new Date(link.expires_at).getTime() <= this.clock.now().getTime())
      throw new AppError(
        'APPROVAL_LINK_EXPIRED',
        `This approval link expired at ${iso(link.expires_at)}, with the hold it announced (APPROVAL_TTL).`,
      );
    if (!policyOf(jsonValue(message.policy)).approverAddresses.includes(link.approver_address))
      throw new AppError('APPROVAL_LINK_REVOKED');
    return { link, message };
  }

  /** An invalid link is a failed credential: 404, and past AUTH_FAILURES_PER_15M from one address, 429. */
  private async refuse(remoteIp: string | null): Promise<never> {
    const failure = new AppError('APPROVAL_LINK_INVALID');
    if (!remoteIp) throw failure;
    return this.throttle.refuse(remoteIp, failure);
  }
}

function decidedElsewhere(message: HeldMessageRow): AppError {
  const status = message.approval_status ?? 'sent without approval';
  return new AppError(
    'APPROVAL_LINK_DECIDED',
    `This message was already ${status} at ${iso(message.approval_decided_at)}; the link changed nothing.`,
  );
}
