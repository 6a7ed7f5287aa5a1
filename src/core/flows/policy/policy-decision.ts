import { AppError, type ErrorCode } from '../../base/errors.js';
import { splitAddress } from '../../base/address.js';
import { firstMatch } from '../../access/recipient-pattern.js';
import type { EffectivePolicy, PolicySource } from '../../access/effective-policy.js';
import type { ApprovalMode } from '../../access/policy.schemas.js';

/** The rule a decision names, in errMsg and in the audit trail. */
export type PolicyRule =
  | 'allowedRecipients'
  | 'blockedRecipients'
  | 'externalSending'
  | 'maxRecipientsPerMessage'
  | 'maxNewRecipientsPerDay'
  | 'autoReplyGuard'
  | 'autoReplyLimit'
  | `approval:${ApprovalMode}`;

/** A refusal: the catalog error a channel maps, and the rule the audit trail records. */
export class PolicyRefusal extends AppError {
  constructor(
    readonly rule: PolicyRule,
    code: ErrorCode,
    detail: string,
    extra?: { retryAfterSeconds?: number },
  ) {
    super(code, detail, extra);
  }
}

const by = (source: PolicySource) => (source === 'mailbox' ? "the mailbox's policy" : `the policy of ${source}`);

/**
 * External means outside the sending mailbox's own domain and its subdomains (docs/api.md,
 * "Outbound policy"): another tenant hosted on this service is still another organisation.
 */
export function isExternal(address: string, mailboxDomain: string): boolean {
  const { domain } = splitAddress(address);
  return domain !== mailboxDomain && !domain.endsWith(`.${mailboxDomain}`);
}

/** The recipient rules for one address: allow lists, block lists, external sending. */
export function recipientRefusal(e: EffectivePolicy, address: string, mailboxDomain: string): PolicyRefusal | null {
  for (const list of e.blockLists) {
    const hit = firstMatch(address, list.patterns);
    if (hit !== null)
      return new PolicyRefusal(
        'blockedRecipients',
        'POLICY_RECIPIENT_REFUSED',
        `Recipient ${address} is refused by policy rule blockedRecipients (${hit}) of ${by(list.source)}.`,
      );
  }
  for (const list of e.allowLists) {
    if (firstMatch(address, list.patterns) === null)
      return new PolicyRefusal(
        'allowedRecipients',
        'POLICY_RECIPIENT_REFUSED',
        `Recipient ${address} is refused by policy rule allowedRecipients of ${by(list.source)}: it matches none of ${list.patterns.join(', ')}.`,
      );
  }
  if (!e.externalSending.allowed && isExternal(address, mailboxDomain))
    return new PolicyRefusal(
      'externalSending',
      'POLICY_RECIPIENT_REFUSED',
      `Recipient ${address} is refused by policy rule externalSending (off in ${by(e.externalSending.source)}): only @${mailboxDomain} may be written to.`,
    );
  return null;
}

/** The counting rules: recipients in one message, new recipients in the rolling day. */
export function countRefusal(
  e: EffectivePolicy,
  counts: { recipients: number; newRecipients: number; newInLastDay: number },
): PolicyRefusal | null {
  const max = e.maxRecipientsPerMessage;
  if (max && counts.recipients > max.value)
    return new PolicyRefusal(
      'maxRecipientsPerMessage',
      'POLICY_LIMIT_EXCEEDED',
      `${counts.recipients} recipients exceed policy rule maxRecipientsPerMessage (${max.value}) of ${by(max.source)}.`,
    );
  const day = e.maxNewRecipientsPerDay;
  if (day && counts.newRecipients > 0 && counts.newInLastDay + counts.newRecipients > day.value)
    return new PolicyRefusal(
      'maxNewRecipientsPerDay',
      'POLICY_LIMIT_EXCEEDED',
      `${counts.newRecipients} new recipient(s) after ${counts.newInLastDay} in the last 24 h exceed policy rule maxNewRecipientsPerDay (${day.value}) of ${by(day.source)}.`,
    );
  return null;
}

/** The approval mode that holds this message, or null when it may leave at once. */
export function approvalHold(
  e: EffectivePolicy,
  facts: { anyExternal: boolean; anyNew: boolean },
): { mode: Exclude<ApprovalMode, 'none'>; source: PolicySource } | null {
  return (
    e.approvals.find(
      (a) =>
        a.mode === 'all' ||
        (a.mode === 'external' && facts.anyExternal) ||
        (a.mode === 'new-recipients' && facts.anyNew),
    ) ?? null
  );
}
