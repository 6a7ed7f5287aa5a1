import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam, session } from '../session';
import { lastEvent } from '../live';
import { go } from '../router';
import { when, type MessageSummary, type Page } from '../types';
import { TrustBadge } from './trust';

const PAGE_SIZE = 50;
type Direction = '' | 'inbound' | 'outbound';

/**
 * Newest first, keyset-paged (the cursor of each page kept for Back), filtered by direction,
 * refreshed live when the mailbox changes. Keys: j/k move, Enter or o opens, x selects, c composes.
 */
export function Inbox() {
  const [direction, setDirection] = useState<Direction>('');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<Page<MessageSummary> | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [focus, setFocus] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const cursor = cursors[cursors.length - 1];
  const table = useRef<HTMLTableElement>(null);

  const load = async () => {
    try {
      const data = await api<Page<MessageSummary>>('GET', '/api/messages', {
        query: { limit: PAGE_SIZE, cursor, direction: direction || undefined, ...mailboxParam() },
      });
      setPage(data);
      setError(null);
    } catch (err) {
      setError(errorText(err));
    }
  };
  useEffect(() => void load(), [cursor, direction, session.mailboxAddress.value]);
  // Live: any change of the mailbox refreshes what is on screen (page one shows arrivals at once).
  useEffect(() => {
    if (lastEvent.value) void load();
  }, [lastEvent.value]);

  const items = page?.items ?? [];
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const bulk = async (what: 'read' | 'unread' | 'delete') => {
    const ids = [...selected];
    if (ids.length === 0) return;
    if (what === 'delete' && !confirm(`Delete ${ids.length} message(s)?`)) return;
    try {
      const r = await api<{ succeededItems: unknown[]; failedItems: { errMsg: string }[] }>(
        'POST',
        what === 'delete' ? '/api/messages/bulk-delete' : '/api/messages/bulk-read-state',
        { body: what === 'delete' ? { ids, ...mailboxParam() } : { ids, isRead: what === 'read', ...mailboxParam() } },
      );
      setNotice(
        `${r.succeededItems.length} done` + (r.failedItems.length ? `, ${r.failedItems.length} failed` : '') + '.',
      );
      setSelected(new Set());
      await load();
    } catch (err) {
      setError(errorText(err));
    }
  };

  const onKey = (e: KeyboardEvent) => {
    if ((e.target as HTMLElement).closest('input, textarea, select')) return;
    const current = items[focus];
    if (e.key === 'j') setFocus(Math.min(focus + 1, items.length - 1));
    else if (e.key === 'k') setFocus(Math.max(focus - 1, 0));
    else if ((e.key === 'Enter' || e.key === 'o') && current) go('message', current.messageId);
    else if (e.key === 'x' && current) toggle(current.messageId);
    else if (e.key === 'c') go('compose');
    else return;
    e.preventDefault();
  };
  useEffect(() => {
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  });
  useEffect(() => {
    table.current?.querySelectorAll<HTMLElement>('tbody tr')[focus]?.querySelector<HTMLElement>('a')?.focus();
  }, [focus]);

  return (
    <section aria-labelledby="inbox-title">
      <div class="toolbar">
        <h1 id="inbox-title">{session.mailboxAddress.value ?? 'Inbox'}</h1>
        <label>
          Show{' '}
          <select
            name="direction"
            value={direction}
            onChange={(e) => {
              setDirection(e.currentTarget.value as Direction);
              setCursors([undefined]);
            }}
          >
            <option value="">all mail</option>
            <option value="inbound">received</option>
            <option value="outbound">sent</option>
          </select>
        </label>
        <button onClick={() => bulk('read')} disabled={!selected.size}>
          Mark read
        </button>
        <button onClick={() => bulk('unread')} disabled={!selected.size}>
          Mark unread
        </button>
        <button class="danger" onClick={() => bulk('delete')} disabled={!selected.size}>
          Delete
        </button>
        <span class="count">{page ? `${page.totalCount} message(s)` : 'loading…'}</span>
      </div>
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
      <table class="messages" ref={table}>
        <thead>
          <tr>
            <th>
              <span class="sr">Select</span>
            </th>
            <th>From / to</th>
            <th>Subject</th>
            <th>Trust</th>
            <th>Date</th>
          </tr>
        </thead>
        <tbody>
          {items.map((m, i) => (
            <tr
              key={m.messageId}
              class={`${m.isRead ? 'read' : 'unread'} ${i === focus ? 'focus' : ''}`}
              data-message-id={m.messageId}
            >
              <td>
                <input
                  type="checkbox"
                  aria-label={`Select ${m.subject || '(no subject)'}`}
                  checked={selected.has(m.messageId)}
                  onChange={() => toggle(m.messageId)}
                />
              </td>
              <td>{m.direction === 'outbound' ? `To ${m.toAddress ?? '—'}` : m.fromDisplayName || m.fromAddress}</td>
              <td>
                <a href={`#/message/${encodeURIComponent(m.messageId)}`} onFocus={() => setFocus(i)}>
                  {m.subject || '(no subject)'}
                </a>
                {m.attachmentCount > 0 && <span title="attachments"> 📎{m.attachmentCount}</span>}
                {m.status === 'pending_approval' && <span class="tag">awaiting approval</span>}
              </td>
              <td>
                <TrustBadge origin={m.origin} authenticated={m.authenticated} />
              </td>
              <td>{when(m.createdAtTs)}</td>
            </tr>
          ))}
          {page && items.length === 0 && (
            <tr>
              <td colSpan={5} class="empty">
                No messages yet. Mail sent to {session.mailboxAddress.value ?? 'this mailbox'} appears here live.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <div class="pager">
        <button disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Newer
        </button>
        <span>page {cursors.length}</span>
        <button
          disabled={!page?.nextCursor}
          onClick={() => page?.nextCursor && setCursors([...cursors, page.nextCursor])}
        >
          Older →
        </button>
      </div>
    </section>
  );
}
