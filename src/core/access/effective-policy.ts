import { AppError } from '../base/errors.js';
import { patternCovers } from './recipient-pattern.js';
import type { ApprovalMode, MailboxPolicy, TokenPolicy } from './policy.schemas.js';

/** Where a constraint came from, so a refusal can name it (docs/api.md, "Outbound policy"). */
export type PolicySource = 'mailbox' | `token ${string}`;

/**
 * The policy a send is judged by: the mailbox's narrowed by every token of the calling chain
 * (docs/contract.md: computed at use, so a policy change binds tokens minted before it). Each layer can
 * only add constraints: an address must pass every allow list, any block list refuses it, the
 * limits are minima, external sending needs every layer's consent, and every approval mode of
 * the chain applies.
 */
export interface EffectivePolicy {
  allowLists: { source: PolicySource; patterns: string[] }[];
  blockLists: { source: PolicySource; patterns: string[] }[];
  maxRecipientsPerMessage: { value: number; source: PolicySource } | null;
  maxNewRecipientsPerDay: { value: number; source: PolicySource } | null;
  externalSending: { allowed: boolean; source: PolicySource };
  approvals: { mode: Exclude<ApprovalMode, 'none'>; source: PolicySource }[];
  autoReplyGuard: boolean;
}

/** One layer of the chain: the mailbox policy or one token's own policy. */
export interface PolicyLayer {
  source: PolicySource;
  policy: TokenPolicy | MailboxPolicy;
}

const minOf = (
  current: { value: number; source: PolicySource } | null,
  value: number | null | undefined,
  source: PolicySource,
) => (value === null || value === undefined || (current && current.value <= value) ? current : { value, source });

/** Narrows `base` by further layers, in chain order (outermost first). */
export function narrow(base: EffectivePolicy, layers: readonly PolicyLayer[]): EffectivePolicy {
  const e: EffectivePolicy = {
    ...base,
    allowLists: [...base.allowLists],
    blockLists: [...base.blockLists],
    approvals: [...base.approvals],
  };
  for (const { source, policy } of layers) {
    if (policy.allowedRecipients?.length) e.allowLists.push({ source, patterns: policy.allowedRecipients });
    if (policy.blockedRecipients?.length) e.blockLists.push({ source, patterns: policy.blockedRecipients });
    e.maxRecipientsPerMessage = minOf(e.maxRecipientsPerMessage, policy.maxRecipientsPerMessage, source);
    e.maxNewRecipientsPerDay = minOf(e.maxNewRecipientsPerDay, policy.maxNewRecipientsPerDay, source);
    if (policy.externalSending === false && e.externalSending.allowed) e.externalSending = { allowed: false, source };
    if (policy.approval && policy.approval !== 'none') e.approvals.push({ mode: policy.approval, source });
  }
  return e;
}

/** Nothing restricted: the start of every chain. */
export const UNRESTRICTED: EffectivePolicy = {
  allowLists: [],
  blockLists: [],
  maxRecipientsPerMessage: null,
  maxNewRecipientsPerDay: null,
  externalSending: { allowed: true, source: 'mailbox' },
  approvals: [],
  autoReplyGuard: true,
};

/** The effective policy of a send: mailbox policy, then each token of the chain (root first). */
export function effectivePolicy(mailbox: MailboxPolicy, tokens: readonly PolicyLayer[]): EffectivePolicy {
  const base = narrow(UNRESTRICTED, [{ source: 'mailbox', policy: mailbox }]);
  return narrow({ ...base, autoReplyGuard: mailbox.autoReplyGuard }, tokens);
}

/** Approval modes ordered by what they hold: a child may require more, never less. */
const approvalAtLeast = (child: ApprovalMode, parent: ApprovalMode): boolean =>
  parent === 'none' || child === 'all' || child === parent;

/**
 * A new token's policy must lie within its creator's token chain, exactly like scopes and
 * expiry (docs/contract.md): a wider allow list, a higher limit, external sending the chain forbids or a
 * weaker approval mode is a 400 naming the field. Omitted fields inherit and always pass.
 */
export function assertWithin(child: TokenPolicy, chain: EffectivePolicy): void {
  const refuse = (field: string, why: string) =>
    new AppError('POLICY_NOT_WITHIN_PARENT', `policy.${field}: ${why}; a new token may only narrow its creator's.`);
  // An empty or omitted allow list adds nothing (inherits), so only a given one is compared.
  if (child.allowedRecipients?.length) {
    for (const list of chain.allowLists) {
      const outside = child.allowedRecipients.find((p) => !list.patterns.some((o) => patternCovers(o, p)));
      if (outside !== undefined) throw refuse('allowedRecipients', `${outside} is outside the allowed recipients`);
    }
  }
  for (const field of ['maxRecipientsPerMessage', 'maxNewRecipientsPerDay'] as const) {
    const ceiling = chain[field];
    const value = child[field];
    if (value !== undefined && ceiling && value > ceiling.value)
      throw refuse(field, `${value} is above the creator's ${ceiling.value}`);
  }
  if (child.externalSending === true && !chain.externalSending.allowed)
    throw refuse('externalSending', 'external sending is off for the creator');
  if (child.approval !== undefined) {
    const weaker = chain.approvals.find((a) => !approvalAtLeast(child.approval!, a.mode));
    if (weaker) throw refuse('approval', `${child.approval} holds less than the creator's ${weaker.mode}`);
  }
}
