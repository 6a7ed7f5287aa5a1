import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam, session } from '../session';
import type { MailboxPolicy } from '../types';
import { Approvers } from './policy-approvers';

const APPROVAL_WORDS: Record<MailboxPolicy['approval'], string> = {
  none: 'none: nothing is held',
  external: 'external: mail to another domain is held',
  'new-recipients': 'new-recipients: mail to someone never written to or heard from is held',
  all: 'all: every send is held',
};

const list = (a: string[], none: string) => (a.length ? a.join(', ') : none);
const limit = (n: number | null) => (n === null ? 'no limit' : String(n));

/**
 * The mailbox's outbound policy (GET /api/mailbox/policy): its rules in words, and its approvers.
 * Changing it needs a domain token (PUT /api/domain/mailboxes/{mailboxId}/policy replaces the whole
 * policy, so the rules shown are sent back unchanged with the new approver list).
 */
export function Policy() {
  const [policy, setPolicy] = useState<MailboxPolicy | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const canEdit = session.kind.value === 'domain';
  useEffect(() => {
    api<MailboxPolicy>('GET', '/api/mailbox/policy', { query: mailboxParam() }).then(setPolicy, (err) =>
      setError(errorText(err)),
    );
  }, [session.mailboxAddress.value]);

  const saveApprovers = async (approverAddresses: string[]) => {
    if (!policy) return;
    setNotice(null);
    const { mailboxId, mailboxAddress: _address, ...rules } = policy;
    const saved = await api<MailboxPolicy>('PUT', `/api/domain/mailboxes/${encodeURIComponent(mailboxId)}/policy`, {
      body: { ...rules, approverAddresses },
    });
    setPolicy(saved);
    setNotice('Approvers saved.');
  };

  if (!policy)
    return error ? (
      <p class="error" role="alert">
        {error}
      </p>
    ) : (
      <p>Loading…</p>
    );
  return (
    <section aria-labelledby="policy-title" class="policy">
      <h1 id="policy-title">Outbound policy of {policy.mailboxAddress}</h1>
      <p class="hint">
        {canEdit
          ? 'A Mailbox resource with spec.policy owns its policy: a change made here lasts until its next reconcile.'
          : 'Read only: the policy is changed with a domain token (sign in with it and open this mailbox).'}
      </p>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <dl class="headers rules" aria-label="Rules">
        <dt>Approval</dt>
        <dd>{APPROVAL_WORDS[policy.approval]}</dd>
        <dt>Allowed</dt>
        <dd>{list(policy.allowedRecipients, 'every recipient (subject to the block list)')}</dd>
        <dt>Blocked</dt>
        <dd>{list(policy.blockedRecipients, 'nobody')}</dd>
        <dt>External</dt>
        <dd>{policy.externalSending ? 'allowed' : 'only this domain and its subdomains'}</dd>
        <dt>Per message</dt>
        <dd>{limit(policy.maxRecipientsPerMessage)} recipients at most</dd>
        <dt>New per day</dt>
        <dd>{limit(policy.maxNewRecipientsPerDay)} new recipients in 24 h</dd>
        <dt>Loop guard</dt>
        <dd>{policy.autoReplyGuard ? 'on: no automatic reply to automatic mail' : 'off'}</dd>
        <dt>Screening</dt>
        <dd>
          {policy.inboundScreening.holdAtScore === null
            ? 'never holds inbound mail'
            : `holds inbound mail scoring ${policy.inboundScreening.holdAtScore} or more`}
        </dd>
      </dl>
      <Approvers list={policy.approverAddresses} canEdit={canEdit} save={saveApprovers} />
    </section>
  );
}
