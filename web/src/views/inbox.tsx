import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { useNewestLoad } from '../newest-load';
import { mailboxParam, session } from '../session';
import { lastEvent } from '../live';
import { go } from '../router';
import { when, type MessageSummary, type Page } from '../types';
import { FOLDERS, FolderNav, type Folder } from '../folders';
import { TrustBadge } from './trust';

const PAGE_SIZE = 50;
const SCREENED_REFRESH_MS = 30_000;

/** The search API's operators (GET /api/messages/search), shown under the box. */
export const SEARCH_HINT =
  'Words and "exact phrases"; from:ann to:bob subject:invoice is:unread is:read has:attachment after:2026-01-31 before:2026-02-01';

/**
 * One folder (Inbox: received, Sent: sent), newest first, keyset-paged (the cursor of each page
 * kept for Back), refreshed live when the mailbox changes; or the results of a search of the
 * whole mailbox. Keys: j/k move, Enter or o opens, x selects, c composes, / searches.
 */
export function Inbox(props: { folder: Exclude<Folder, 'held' | 'scheduled'> }) {
  const folder = FOLDERS.find((f) => f.id === props.folder)!;
  const [draft, setDraft] = useState('');
  const [q, setQ] = useState('');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<Page<MessageSummary> | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [focus, setFocus] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const cursor = cursors[cursors.length - 1];
  const table = useRef<HTMLTableElement>(null);
  const search = useRef<HTMLInputElement>(null);
  const startLoad = useNewestLoad();

  const load = async () => {
    const newest = startLoad();
    try {
      const data = q
        ? await api<{ items: MessageSummary[]; nextCursor: string | null }>('GET', '/api/messages/search', {
            query: { q, limit: PAGE_SIZE, cursor, ...mailboxParam() },
          })
        : await api<Page<MessageSummary>>('GET', '/api/messages', {
            query: { limit: PAGE_SIZE, cursor, ...folder.query, ...mailboxParam() },
          });
      if (!newest()) return;
      setPage({ totalCount: -1, ...data });
      setError(null);
    } catch (err) {
      if (newest()) setError(errorText(err));
    }
  };
  useEffect(() => void load(), [cursor, props.folder, q, session.mailboxAddress.value]);
  useEffect(() => {
    setCursors([undefined]);
    setSelected(new Set());
  }, [props.folder, q]);
  // Live: any change of the mailbox refreshes what is on screen (page one shows arrivals at once).
  useEffect(() => {
    if (lastEvent.value) void load();
  }, [lastEvent.value]);
  // Held mail appends no event (no live reader is told of it, docs/screening.md): the Screened
  // folder looks again every half minute while it is open; a release is an event and shows at once.
  useEffect(() => {
    if (props.folder !== 'screened' || q) return;
    const timer = setInterval(() => void load(), SCREENED_REFRESH_MS);
    return () => clearInterval(timer);
  }, [props.folder, q, cursor]);

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
    else if (e.key === '/') search.current?.focus();
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
    <div class="mail">
      <FolderNav current={props.folder} />
      <section aria-labelledby="inbox-title" class="folder">
        <div class="toolbar">
          <h1 id="inbox-title">{q ? 'Search results' : folder.label}</h1>
          <button onClick={() => bulk('read')} disabled={!selected.size}>
            Mark read
          </button>
          <button onClick={() => bulk('unread')} disabled={!selected.size}>
            Mark unread
          </button>
          <button class="danger" onClick={() => bulk('delete')} disabled={!selected.size}>
            Delete
          </button>
          <span class="count">
            {!page ? 'loading…' : page.totalCount >= 0 ? `${page.totalCount} message(s)` : `${items.length} found`}
          </span>
        </div>
        <form
          class="search"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setQ(draft.trim());
          }}
        >
          <label>
            <span class="sr">Search</span>
            <input
              ref={search}
              type="search"
              name="q"
              aria-label="Search"
              aria-describedby="search-hint"
              placeholder="Search mail (press /)"
              value={draft}
              onInput={(e) => setDraft(e.currentTarget.value)}
            />
          </label>
          <button type="submit">Search</button>
          {q && (
            <button
              type="button"
              class="link"
              onClick={() => {
                setDraft('');
                setQ('');
              }}
            >
              Clear search
            </button>
          )}
          <p id="search-hint" class="hint">
            {SEARCH_HINT}
          </p>
        </form>
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
              <th class="trust-col">Trust</th>
              <th class="date-col">Date</th>
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
                <td class="who-col">
                  {m.direction === 'outbound' ? `To ${m.toAddress ?? '—'}` : m.fromDisplayName || m.fromAddress}
                </td>
                <td class="subject-col">
                  <a href={`#/message/${encodeURIComponent(m.messageId)}`} onFocus={() => setFocus(i)}>
                    {m.subject || '(no subject)'}
                  </a>
                  {m.attachmentCount > 0 && <span title="attachments"> 📎{m.attachmentCount}</span>}
                  {m.approvalStatus === 'pending' && <span class="tag">awaiting approval</span>}
                  {m.snippet && <div class="snippet">{m.snippet}</div>}
                </td>
                <td class="trust-col">
                  <TrustBadge origin={m.origin} authenticated={m.authenticated} />
                </td>
                <td class="date-col">
                  <time dateTime={new Date(m.createdAtTs).toISOString()} title={when(m.createdAtTs)}>
                    {shortWhen(m.createdAtTs)}
                  </time>
                </td>
              </tr>
            ))}
            {page && items.length === 0 && (
              <tr>
                <td colSpan={5} class="empty">
                  {q
                    ? 'Nothing matches this search.'
                    : props.folder === 'sent'
                      ? 'Nothing sent yet.'
                      : `No messages yet. Mail sent to ${session.mailboxAddress.value ?? 'this mailbox'} appears here live.`}
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
    </div>
  );
}

/** Today: the time; this year: day and month; older: the date. Short enough for a phone's width. */
export function shortWhen(ts: number): string {
  const d = new Date(ts);
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (d.getFullYear() === now.getFullYear()) return d.toLocaleDateString([], { day: 'numeric', month: 'short' });
  return d.toLocaleDateString();
}
