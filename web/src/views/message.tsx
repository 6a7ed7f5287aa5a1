import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam } from '../session';
import { go } from '../router';
import { when, type MessageDetail } from '../types';
import { TrustBadge } from './trust';
import { AttachmentItem } from './message-attachments';
import { BodyTabs, type Tab } from './message-body';
import { MessageActions } from './message-actions';

/**
 * One message: headers, trust, body (HTML sandboxed), attachments, deliveries, and what can be done
 * with it (message-actions.tsx). Keys: r reply, a reply all, f forward, u back.
 */
export function MessageView(props: { messageId: string }) {
  const [m, setM] = useState<MessageDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [tab, setTab] = useState<Tab | null>(null);
  const path = `/api/messages/${encodeURIComponent(props.messageId)}`;

  useEffect(() => {
    let cancelled = false;
    setM(null);
    setNotice(null);
    setActionError(null);
    (async () => {
      try {
        const detail = await api<MessageDetail>('GET', path, { query: mailboxParam() });
        if (cancelled) return;
        setM(detail);
        if (!detail.isRead) {
          await api('PUT', `${path}/read-state`, { body: { isRead: true, ...mailboxParam() } });
          setM({ ...detail, isRead: true });
        }
      } catch (err) {
        if (!cancelled) setError(errorText(err));
      }
    })();
    return () => void (cancelled = true);
  }, [props.messageId]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.target as HTMLElement).closest('input, textarea, select')) return;
      if (e.key === 'r') go('reply', props.messageId);
      else if (e.key === 'a') go('reply-all', props.messageId);
      else if (e.key === 'f') go('forward', props.messageId);
      else if (e.key === 'u') go('inbox');
      else return;
      e.preventDefault();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [props.messageId]);

  const act = async (fn: () => Promise<unknown>) => {
    setActionError(null);
    setNotice(null);
    try {
      await fn();
    } catch (err) {
      setActionError(errorText(err));
    }
  };
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!m) return <p>Loading…</p>;
  return (
    <article class="message" aria-labelledby="message-subject">
      <MessageActions
        m={m}
        act={act}
        changed={(next, words) => {
          setM(next);
          setNotice(words);
        }}
      />
      {actionError && (
        <p class="error" role="alert">
          {actionError}
        </p>
      )}
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <h1 id="message-subject">{m.subject || '(no subject)'}</h1>
      <dl class="headers">
        <dt>From</dt>
        <dd>{m.fromDisplayName ? `${m.fromDisplayName} <${m.fromAddress}>` : m.fromAddress}</dd>
        <dt>To</dt>
        <dd>{m.toAddresses.join(', ') || '—'}</dd>
        {m.ccAddresses.length > 0 && (
          <>
            <dt>Cc</dt>
            <dd>{m.ccAddresses.join(', ')}</dd>
          </>
        )}
        {m.bccAddresses.length > 0 && (
          <>
            <dt>Bcc</dt>
            <dd>{m.bccAddresses.join(', ')}</dd>
          </>
        )}
        <dt>Date</dt>
        <dd>{when(m.createdAtTs)}</dd>
        {m.sendAtTs != null && (
          <>
            <dt>{m.status === 'scheduled' ? 'Sends' : 'Was due'}</dt>
            <dd>
              {when(m.sendAtTs)}
              {m.status === 'cancelled' && ' (cancelled: it never left)'}
            </dd>
          </>
        )}
        {m.screening?.held && (
          <>
            <dt>Screening</dt>
            <dd>
              held back from the agent (score {m.screening.score}
              {m.screening.signals.length ? `: ${m.screening.signals.join(', ')}` : ''})
            </dd>
          </>
        )}
        {(m.origin !== undefined || m.authentication !== undefined) && (
          <>
            <dt>Trust</dt>
            <dd>
              <TrustBadge origin={m.origin} authenticated={m.authenticated} authentication={m.authentication} />
            </dd>
          </>
        )}
        {m.deliveryStatus && (
          <>
            <dt>Delivery</dt>
            <dd>
              {m.deliveryStatus}
              {m.deliveries.map((d) => (
                <div key={d.address} class="delivery">
                  {d.kind} {d.address}: {d.status}
                  {d.remoteReply ? ` (${d.remoteReply})` : ''}
                </div>
              ))}
            </dd>
          </>
        )}
      </dl>
      {m.attachments.length > 0 && (
        <ul class="attachments" aria-label="Attachments">
          {m.attachments.map((a) => (
            <AttachmentItem key={a.attachmentId} path={path} a={a} onError={setActionError} />
          ))}
        </ul>
      )}
      <BodyTabs key={m.messageId} m={m} path={path} tab={tab ?? (m.bodyHtml ? 'html' : 'text')} setTab={setTab} />
    </article>
  );
}
