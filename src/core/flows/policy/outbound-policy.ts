import { splitAddress } from '../../base/address.js';
import type { Clock } from '../../base/time.js';
import type { MailboxRef } from '../../access/principal.js';
import type { BlobStore } from '../../../storage/blobs/blob-store.js';
import type { AuditStore } from '../../state/audit/audit.store.js';
import type { Channel } from '../../state/audit/audit.schemas.js';
import {
  effectivePolicy,
  type EffectivePolicy,
  type PolicyLayer,
  type PolicySource,
} from '../../access/effective-policy.js';
import { approvalHold, countRefusal, isExternal, PolicyRefusal, recipientRefusal } from './policy-decision.js';
import { AUTO_SUBMITTED_GENERATED, automationOf, headerSection } from './loop-guard.js';
import type { PolicyLayers, PolicyStore } from './policy.store.js';
import type { ApprovalMode } from '../../access/policy.schemas.js';
import { secretIn, type SecretKind } from './secret-in-body.js';

/** An SMTP transaction's policy, read at its MAIL FROM (OutboundPolicy.rulesOf). */
export interface TransactionRules {
  readonly effective: EffectivePolicy;
}

/** The mailbox's policy narrowed by each token of the chain that has one of its own. */
function effectiveOf({ mailbox, chain }: PolicyLayers): EffectivePolicy {
  const layers: PolicyLayer[] = chain
    .filter((t) => t.policy !== null)
    .map((t) => ({ source: `token ${t.id}`, policy: t.policy! }));
  return effectivePolicy(mailbox, layers);
}

/** Who sends, through which channel: what the policy chain and the audit trail need. */
export interface SendActor {
  tokenId: string;
  /** A send comes through HTTP, MCP or SMTP; the worker and approval links only decide. */
  channel: Exclude<Channel, 'worker' | 'approval-link'>;
}

/** The outcome of the policy step for a whole message (docs/api.md, decision order). */
export interface PolicyVerdict {
  /**
   * The approval mode holding the message, or null: it is queued at once. `rule` secretInBody:
   * held whatever the policy because the message carries a secret (`secret` its kind).
   */
  hold: {
    mode: Exclude<ApprovalMode, 'none'>;
    source: PolicySource;
    rule?: 'secretInBody';
    secret?: SecretKind;
  } | null;
  recipientCount: number;
  newRecipientCount: number;
  /** RFC 3834 Auto-Submitted value the composed message carries (HTTP/MCP under the guard). */
  autoSubmitted: string | null;
  /** Whether the per-counterparty reply budget applies (the guard is on and this is a reply). */
  replyBudget: boolean;
}

/** The message the policy judges: recipients and, for a reply, the parent's id. */
export interface PolicyDraft {
  recipients: readonly string[];
  parentId: string | null;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/**
 * The one outbound policy decision: HTTP and MCP send/reply and SMTP submission all
 * reach it through SendService.submit (whole message) and SMTP RCPT TO through `checkRecipient`,
 * so no channel can skip or re-implement a rule. Every refusal is written to the audit trail
 * before it is thrown.
 */
export class OutboundPolicy {
  constructor(
    private readonly store: PolicyStore,
    private readonly audit: AuditStore,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly options: { autoReplyLimitPerHour: number },
  ) {}

  /**
   * The mailbox policy narrowed by every token of the actor's chain, read now (docs/contract.md:
   * at use), and which of `addresses` are not new recipients.
   */
  private async inputs(mailboxId: string, tokenId: string, addresses: readonly string[]) {
    const read = await this.store.policyInputs(mailboxId, tokenId, addresses);
    return { e: effectiveOf(read), contacted: read.contacted };
  }

  /**
   * The rules of one SMTP transaction, from layers read with its MAIL FROM (one statement with the
   * sender identity), for its RCPT TO commands (docs/api.md, "Outbound policy").
   */
  rulesOf(layers: PolicyLayers): TransactionRules {
    return { effective: effectiveOf(layers) };
  }

  /**
   * SMTP RCPT TO (RFC 5321 §4.1.1.3): the recipient rules for one more address, given those
   * already accepted in this transaction; a refusal is `550 5.7.1` for that recipient only. Judged
   * by the transaction's `rules` without a read of its own, unless they count new recipients
   * (`maxNewRecipientsPerDay` needs the contacts and the day's count: everything is read then).
   */
  async checkRecipient(
    actor: SendActor,
    mailbox: MailboxRef,
    address: string,
    accepted: readonly string[],
    rules?: TransactionRules,
  ) {
    const draft = { recipients: [...new Set([...accepted, address])], parentId: null };
    const known = rules && !rules.effective.maxNewRecipientsPerDay ? rules.effective : undefined;
    await this.judge(actor, mailbox, draft, address, known);
  }

  /**
   * The verdict for the composed message: held for approval whatever the policy when its subject or
   * a body carries a secret (rule secretInBody). Judged on the parsed content every send path
   * writes (HTTP, MCP, SMTP direct and queued), so an encoded body is read decoded.
   */
  withContent(verdict: PolicyVerdict, content: { subject: string; bodyText: string | null; bodyHtml: string | null }) {
    const secret = secretIn([content.subject, content.bodyText, content.bodyHtml]);
    if (secret === null) return verdict;
    return {
      ...verdict,
      hold: { mode: 'all' as const, source: 'mailbox' as const, rule: 'secretInBody' as const, secret },
    };
  }

  /** The whole-message decision: recipient rules, counts, loop guard, then whether approval holds it. */
  async decide(actor: SendActor, mailbox: MailboxRef, draft: PolicyDraft): Promise<PolicyVerdict> {
    return this.judge(actor, mailbox, draft, null);
  }

  /**
   * The loop guard's reply budget (AUTO_REPLY_LIMIT_PER_HOUR per counterparty): checked with the
   * rate limit, after the policy, so a refused message never spends it.
   */
  async assertReplyBudget(actor: SendActor, mailbox: MailboxRef, draft: PolicyDraft, verdict: PolicyVerdict) {
    if (!verdict.replyBudget) return;
    const now = this.clock.now();
    const counts = await this.store.repliesSince(mailbox.id, draft.recipients, new Date(now.getTime() - HOUR_MS));
    const over = counts.find((c) => c.n >= this.options.autoReplyLimitPerHour);
    if (!over) return;
    const retryAfterSeconds = Math.max(1, Math.ceil((over.oldest.getTime() + HOUR_MS - now.getTime()) / 1000));
    throw await this.refused(
      actor,
      mailbox,
      draft.recipients.length,
      new PolicyRefusal(
        'autoReplyLimit',
        'AUTO_REPLY_LIMITED',
        `${over.n} replies to ${over.address} in the last hour reach the loop guard's limit (${this.options.autoReplyLimitPerHour}); retry in ${retryAfterSeconds} s.`,
        { retryAfterSeconds },
      ),
    );
  }

  private async judge(
    actor: SendActor,
    mailbox: MailboxRef,
    draft: PolicyDraft,
    onlyAddress: string | null,
    known?: EffectivePolicy,
  ): Promise<PolicyVerdict> {
    // Rules already read (RCPT TO without a count of new recipients) need no contacts: nothing that
    // depends on them (the day's count, approval) is decided for one recipient.
    const { e, contacted } = known
      ? { e: known, contacted: new Set<string>() }
      : await this.inputs(mailbox.id, actor.tokenId, draft.recipients);
    const domain = splitAddress(mailbox.address).domain;
    const fail = (refusal: PolicyRefusal) =>
      this.refused(actor, mailbox, onlyAddress ? 1 : draft.recipients.length, refusal);
    for (const address of onlyAddress ? [onlyAddress] : draft.recipients) {
      const refusal = recipientRefusal(e, address, domain);
      if (refusal) throw await fail(refusal);
    }
    // The new recipients come with the policy (one round trip), so the audit trail's counts are
    // right even for a limit set later in the day.
    const newOnes = draft.recipients.filter((a) => !contacted.has(a));
    const newInLastDay =
      e.maxNewRecipientsPerDay && newOnes.length
        ? await this.store.newRecipientsSince(mailbox.id, new Date(this.clock.now().getTime() - DAY_MS))
        : 0;
    const counted = countRefusal(e, {
      recipients: draft.recipients.length,
      newRecipients: newOnes.length,
      newInLastDay,
    });
    if (counted) throw await fail(counted);
    if (e.autoReplyGuard && draft.parentId) {
      const why = await this.automationOfParent(draft.parentId);
      if (why)
        throw await fail(
          new PolicyRefusal(
            'autoReplyGuard',
            'AUTO_REPLY_REFUSED',
            `The message replied to is automatic or bulk mail (${why}); policy rule autoReplyGuard refuses replies to it (RFC 3834).`,
          ),
        );
    }
    return {
      hold: approvalHold(e, {
        anyExternal: draft.recipients.some((a) => isExternal(a, domain)),
        anyNew: newOnes.length > 0,
      }),
      recipientCount: draft.recipients.length,
      newRecipientCount: newOnes.length,
      autoSubmitted: e.autoReplyGuard && actor.channel !== 'smtp' ? AUTO_SUBMITTED_GENERATED : null,
      replyBudget: e.autoReplyGuard && draft.parentId !== null,
    };
  }

  /** Why the parent must not be answered automatically: its stored header, else its raw header section. */
  private async automationOfParent(parentId: string): Promise<string | null> {
    const parent = await this.store.parent(parentId);
    if (!parent || parent.direction !== 'inbound') return null;
    if (parent.auto_submitted && parent.auto_submitted !== AUTO_SUBMITTED_GENERATED)
      return `Auto-Submitted: ${parent.auto_submitted}`;
    if (!parent.raw_blob_key) return null;
    const raw = await this.blobs.get(parent.raw_blob_key);
    return automationOf(headerSection(raw));
  }

  /** Writes the refusal to the audit trail, then hands it back to be thrown. */
  private async refused(actor: SendActor, mailbox: MailboxRef, recipientCount: number, refusal: PolicyRefusal) {
    await this.recordRefusal(actor, mailbox, recipientCount, refusal.rule, refusal);
    return refusal;
  }

  /** An audited refusal outside the policy proper (the rate limit), so every attempt is in the trail. */
  async recordRefusal(actor: SendActor, mailbox: MailboxRef, recipientCount: number, rule: string, err: Error) {
    await this.audit.append({
      mailboxId: mailbox.id,
      domainId: mailbox.domainId,
      tokenId: actor.tokenId,
      channel: actor.channel,
      decision: 'refused',
      rule,
      reason: err.message,
      recipientCount,
      messageId: null,
      at: this.clock.now(),
    });
  }
}
