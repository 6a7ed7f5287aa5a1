import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { when } from '../types';

/** POST /api/approval-links/view (docs/api.md, "Approval links"). */
interface LinkView {
  messageId: string;
  mailboxAddress: string;
  approverAddress: string;
  subject: string;
  fromAddress: string;
  fromDisplayName: string;
  toAddresses: string[];
  ccAddresses: string[];
  bccAddresses: string[];
  bodyText: string;
  bodyTruncated: boolean;
  attachments: { filename: string; contentType: string; sizeBytes: number }[];
  rule: string | null;
  reason: string | null;
  tokenName: string | null;
  heldAtTs: number;
  expiresAtTs: number;
  approvalStatus: 'pending' | 'approved' | 'rejected' | 'expired';
  decidedAtTs: number | null;
}

/**
 * The page a mailed approval link opens (`#/approve/<credential>`), without signing in: the held
 * message as text (Preact escapes every field; the body is a <pre>, never HTML), why it was held,
 * and Approve / Reject with a reason. The credential is the link's only authority: kept in memory
 * and taken out of the address bar at once, so it stays out of the history and of any later
 * navigation; it reaches the server only in a request body.
 */
export function ApproveLink(props: { credential: string }) {
  const [credential] = useState(props.credential);
  const [view, setView] = useState<LinkView | null>(null);
  const [error, setError] = useState<string | null>(credential ? null : 'Open the link from your mail again.');
  const [outcome, setOutcome] = useState<string | null>(null);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    history.replaceState(null, '', `${location.pathname}${location.search}#/approve`);
    if (!credential) return;
    api<LinkView>('POST', '/api/approval-links/view', { token: null, body: { credential } }).then(setView, (err) =>
      setError(errorText(err)),
    );
  }, [credential]);
  const decide = async (decision: 'approve' | 'reject') => {
    setBusy(true);
    setError(null);
    try {
      await api('POST', '/api/approval-links/decision', {
        token: null,
        body: { credential, decision, ...(reason.trim() ? { reason: reason.trim() } : {}) },
      });
      setOutcome(
        decision === 'approve' ? 'Approved: the message is on its way.' : 'Rejected: the message will not be sent.',
      );
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const open = view?.approvalStatus === 'pending' && !outcome;
  return (
    <main id="main" class="approve-link">
      <h1>Approve a held message</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {outcome && (
        <p class="notice" role="status">
          {outcome}
        </p>
      )}
      {view && view.approvalStatus !== 'pending' && !outcome && (
        <p class="notice" role="status">
          This message was already {view.approvalStatus}
          {view.decidedAtTs ? ` (${when(view.decidedAtTs)})` : ''}. There is nothing left to decide.
        </p>
      )}
      {view && (
        <article class="held-card" aria-label={view.subject || '(no subject)'}>
          <h2>{view.subject || '(no subject)'}</h2>
          <dl class="headers">
            <dt>From</dt>
            <dd>{view.fromDisplayName ? `${view.fromDisplayName} <${view.fromAddress}>` : view.fromAddress}</dd>
            <dt>To</dt>
            <dd>{view.toAddresses.join(', ') || '—'}</dd>
            {view.ccAddresses.length > 0 && (
              <>
                <dt>Cc</dt>
                <dd>{view.ccAddresses.join(', ')}</dd>
              </>
            )}
            {view.bccAddresses.length > 0 && (
              <>
                <dt>Bcc</dt>
                <dd>{view.bccAddresses.join(', ')}</dd>
              </>
            )}
            <dt>Sent by</dt>
            <dd>{view.tokenName ? `token “${view.tokenName}”` : '—'}</dd>
            <dt>Rule</dt>
            <dd>{view.rule ?? '—'}</dd>
            {view.reason && (
              <>
                <dt>Why</dt>
                <dd>{view.reason}</dd>
              </>
            )}
            <dt>Held</dt>
            <dd>{when(view.heldAtTs)}</dd>
            <dt>Expires</dt>
            <dd>{when(view.expiresAtTs)} (rejected then if nobody decides)</dd>
            {view.attachments.length > 0 && (
              <>
                <dt>Attached</dt>
                <dd>
                  {view.attachments
                    .map((a) => `${a.filename || 'attachment'} (${Math.ceil(a.sizeBytes / 1024)} KiB)`)
                    .join(', ')}
                </dd>
              </>
            )}
          </dl>
          <pre class="body-text">{view.bodyText || '(no text)'}</pre>
          {view.bodyTruncated && <p class="hint">The text is cut here; the message is sent whole.</p>}
          {open && (
            <>
              <label>
                Reason (optional, kept in the audit trail with your address)
                <input name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
              </label>
              <div class="toolbar">
                <button disabled={busy} onClick={() => void decide('approve')}>
                  Approve and send
                </button>
                <button class="danger" disabled={busy} onClick={() => void decide('reject')}>
                  Reject
                </button>
              </div>
            </>
          )}
          <p class="hint">
            You are deciding as {view.approverAddress}, an approver of {view.mailboxAddress}. This link works once.
          </p>
        </article>
      )}
    </main>
  );
}
