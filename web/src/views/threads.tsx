import { api } from '../api';
import { mailboxParam } from '../session';
import { go } from '../router';
import { FolderNav } from '../folders';
import { usePaged } from '../paging';
import { stateLabel, THREAD_STATES, when, type Page, type ThreadState, type ThreadSummary } from '../types';
import { shortWhen } from './inbox';

/**
 * Conversations by workflow state (GET /api/threads?state=), most recent activity first: what
 * needs a person, what waits for the other side and when its follow-up is due. Live: a state set
 * anywhere (thread.state-changed) or an arrival refreshes the list.
 */
export function Threads(props: { state: ThreadState | null }) {
  const list = usePaged(
    (cursor) =>
      api<Page<ThreadSummary>>('GET', '/api/threads', {
        query: { state: props.state, limit: 50, cursor, ...mailboxParam() },
      }),
    props.state ?? 'all',
  );
  const title = props.state ? stateLabel(props.state) : 'All conversations';
  const items = list.page?.items ?? [];
  return (
    <div class="mail">
      <FolderNav current={props.state ?? 'threads'} />
      <section aria-labelledby="threads-title" class="folder">
        <div class="toolbar">
          <h1 id="threads-title">{title}</h1>
          <label>
            State
            <select
              name="state"
              value={props.state ?? ''}
              onChange={(e) => (e.currentTarget.value ? go('threads', e.currentTarget.value) : go('threads'))}
            >
              <option value="">any</option>
              {THREAD_STATES.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.label}
                </option>
              ))}
            </select>
          </label>
          <span class="count">{list.page ? `${list.page.totalCount} conversation(s)` : 'loading…'}</span>
        </div>
        {list.error && (
          <p class="error" role="alert">
            {list.error}
          </p>
        )}
        <table class="messages threads">
          <thead>
            <tr>
              <th>Subject</th>
              <th class="state-col">State</th>
              <th class="date-col">Last</th>
            </tr>
          </thead>
          <tbody>
            {items.map((t) => (
              <tr key={t.threadId} data-thread-id={t.threadId}>
                <td class="subject-col">
                  <a href={`#/thread/${encodeURIComponent(t.threadId)}`}>{t.subject || '(no subject)'}</a>
                  {t.followUpAtTs !== null && <div class="snippet">follow-up {when(t.followUpAtTs)}</div>}
                </td>
                <td class="state-col">
                  <span class={`state state-${t.state}`}>{stateLabel(t.state)}</span>
                </td>
                <td class="date-col">
                  <time dateTime={new Date(t.lastMessageAtTs).toISOString()} title={when(t.lastMessageAtTs)}>
                    {shortWhen(t.lastMessageAtTs)}
                  </time>
                </td>
              </tr>
            ))}
            {list.page && items.length === 0 && (
              <tr>
                <td colSpan={3} class="empty">
                  {props.state ? `No conversation is “${title.toLowerCase()}”.` : 'No conversations yet.'}
                </td>
              </tr>
            )}
          </tbody>
        </table>
        {list.pager}
      </section>
    </div>
  );
}
