import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam } from '../session';
import { when, type MessageDetail } from '../types';

/** A thread, oldest first; each message opens on its own screen. */
export function ThreadView(props: { threadId: string }) {
  const [thread, setThread] = useState<{ subject: string; messages: MessageDetail[] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<{ subject: string; messages: MessageDetail[] }>('GET', `/api/threads/${encodeURIComponent(props.threadId)}`, {
      query: mailboxParam(),
    }).then(setThread, (err) => setError(errorText(err)));
  }, [props.threadId]);
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!thread) return <p>Loading…</p>;
  return (
    <section aria-labelledby="thread-subject">
      <a href="#/inbox">← Inbox</a>
      <h1 id="thread-subject">{thread.subject || '(no subject)'}</h1>
      <ol class="thread">
        {thread.messages.map((m) => (
          <li key={m.messageId} class={m.direction}>
            <a href={`#/message/${encodeURIComponent(m.messageId)}`}>
              <strong>{m.direction === 'outbound' ? 'You' : m.fromDisplayName || m.fromAddress}</strong> ·{' '}
              {when(m.createdAtTs)}
            </a>
            <p class="snippet">{(m.bodyText ?? '').slice(0, 280)}</p>
          </li>
        ))}
      </ol>
    </section>
  );
}
