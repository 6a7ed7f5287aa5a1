import { useEffect, useState } from 'preact/hooks';
import { api, download, errorText } from '../api';
import { mailboxParam } from '../session';
import { go } from '../router';
import { MailFrame } from '../mail-frame';
import { when, type MessageDetail } from '../types';
import { TrustBadge } from './trust';

/** One message: headers, trust, body (HTML sandboxed), attachments, deliveries. Keys: r reply, u back. */
export function MessageView(props: { messageId: string }) {
  const [m, setM] = useState<MessageDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const path = `/api/messages/${encodeURIComponent(props.messageId)}`;

  useEffect(() => {
    let cancelled = false;
    setM(null);
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
      else if (e.key === 'u') go('inbox');
      else return;
      e.preventDefault();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [props.messageId]);

  const act = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      setError(errorText(err));
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
      <div class="toolbar">
        <a href="#/inbox">← Inbox</a>
        <button onClick={() => go('reply', m.messageId)}>Reply</button>
        <a href={`#/thread/${encodeURIComponent(m.threadId)}`}>Thread</a>
        <button
          onClick={() =>
            act(async () => {
              await api('PUT', `${path}/read-state`, { body: { isRead: !m.isRead, ...mailboxParam() } });
              setM({ ...m, isRead: !m.isRead });
            })
          }
        >
          Mark {m.isRead ? 'unread' : 'read'}
        </button>
        <button
          class="danger"
          onClick={() =>
            act(async () => {
              if (!confirm('Delete this message?')) return;
              await api('DELETE', path, { query: mailboxParam() });
              go('inbox');
            })
          }
        >
          Delete
        </button>
        <button class="link" onClick={() => act(() => download(`${path}/raw`, `${m.messageId}.eml`))}>
          Raw source
        </button>
      </div>
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
            <li key={a.attachmentId}>
              <button
                class="link"
                onClick={() =>
                  act(() =>
                    download(`${path}/attachments/${encodeURIComponent(a.attachmentId)}`, a.filename || 'attachment'),
                  )
                }
              >
                {a.filename || 'attachment'}
              </button>{' '}
              <span class="meta">
                {a.contentType}, {Math.ceil(a.sizeBytes / 1024)} KiB
              </span>
            </li>
          ))}
        </ul>
      )}
      {m.bodyHtml ? <MailFrame html={m.bodyHtml} /> : <pre class="body-text">{m.bodyText ?? ''}</pre>}
    </article>
  );
}
