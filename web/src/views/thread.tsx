import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam } from '../session';
import { lastEvent } from '../live';
import { useNewestLoad } from '../newest-load';
import { stateLabel, when, type ThreadDetail } from '../types';
import { ThreadStateForm } from './thread-state-form';
import { ThreadMessage } from './thread-message';

/**
 * A conversation (GET /api/threads/{threadId}): its messages oldest first, each with sender, time
 * and snippet (the newest expanded), its workflow state and follow-up, and the form that sets
 * them. Live: a new message or a state set elsewhere reloads it.
 */
export function ThreadView(props: { threadId: string }) {
  const [thread, setThread] = useState<ThreadDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const startLoad = useNewestLoad();
  const load = () => {
    const newest = startLoad();
    return api<ThreadDetail>('GET', `/api/threads/${encodeURIComponent(props.threadId)}`, {
      query: mailboxParam(),
    }).then(
      (t) => {
        if (!newest()) return;
        setThread(t);
        setError(null);
      },
      (err) => newest() && setError(errorText(err)),
    );
  };
  useEffect(() => void load(), [props.threadId, lastEvent.value]);
  if (!thread)
    return error ? (
      <p class="error" role="alert">
        {error}
      </p>
    ) : (
      <p>Loading…</p>
    );
  const newest = thread.messages[thread.messages.length - 1];
  return (
    <section aria-labelledby="thread-subject" class="conversation">
      <div class="toolbar">
        <a href="#/threads">← Conversations</a>
        {newest && <a href={`#/reply/${encodeURIComponent(newest.messageId)}`}>Reply to the last message</a>}
      </div>
      <h1 id="thread-subject">{thread.subject || '(no subject)'}</h1>
      <dl class="headers">
        <dt>State</dt>
        <dd>
          <span class={`state state-${thread.state}`}>{stateLabel(thread.state)}</span>
          {thread.awaitingReplySinceTs !== null && <span class="meta"> since {when(thread.awaitingReplySinceTs)}</span>}
        </dd>
        <dt>Follow-up</dt>
        <dd>{thread.followUpAtTs === null ? 'none' : when(thread.followUpAtTs)}</dd>
        <dt>Messages</dt>
        <dd>{thread.messages.length}</dd>
      </dl>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <ThreadStateForm
        threadId={thread.threadId}
        state={thread.state}
        followUpAtTs={thread.followUpAtTs}
        onSaved={(t) => {
          setThread({
            ...thread,
            state: t.state,
            followUpAtTs: t.followUpAtTs,
            awaitingReplySinceTs: t.awaitingReplySinceTs,
          });
          setNotice(`Saved: ${stateLabel(t.state)}${t.followUpAtTs ? `, follow-up ${when(t.followUpAtTs)}` : ''}.`);
        }}
      />
      <ol class="thread" aria-label="Messages">
        {thread.messages.map((m) => (
          <ThreadMessage key={m.messageId} m={m} open={m === newest} />
        ))}
      </ol>
    </section>
  );
}
