import { useEffect, useState } from 'preact/hooks';
import { api } from './api';
import { mailboxParam, session } from './session';
import { lastEvent } from './live';
import { features } from './features';
import type { DraftSummary, MessageSummary, Page } from './types';

/** The folders of the console, each one filter of GET /api/messages. */
export type Folder = 'inbox' | 'sent' | 'held' | 'screened';

export const FOLDERS: { id: Folder; label: string; query: Record<string, string> }[] = [
  { id: 'inbox', label: 'Inbox', query: { direction: 'inbound' } },
  { id: 'sent', label: 'Sent', query: { direction: 'outbound' } },
  { id: 'held', label: 'Held', query: { approval: 'pending' } },
  // Inbound mail the screening held back from the agents (docs/screening.md).
  { id: 'screened', label: 'Screened', query: { screening: 'held' } },
];

/** At most this many unread are counted (search has no total); beyond, the count reads "100+". */
const UNREAD_CAP = 100;

/** A folder of the nav: one of GET /api/messages, or the drafts (GET /api/drafts). */
export type NavFolder = Folder | 'drafts';

export interface FolderCounts {
  inbox: number;
  sent: number;
  held: number;
  screened: number;
  drafts: number;
  unread: number;
  unreadMore: boolean;
}

/**
 * Counts per folder: the list's totalCount (limit=1 reads one row and the mailbox counters; the
 * drafts' own list for Drafts), and unread from the search API's `is:unread`, refreshed on every
 * live event (draft.created and draft.deleted among them).
 */
export function useFolderCounts(): FolderCounts | null {
  const [counts, setCounts] = useState<FolderCounts | null>(null);
  useEffect(() => {
    let cancelled = false;
    const total = (query: Record<string, string>) =>
      api<Page<MessageSummary>>('GET', '/api/messages', { query: { ...query, limit: 1, ...mailboxParam() } }).then(
        (p) => p.totalCount,
        () => 0,
      );
    const drafts = api<Page<DraftSummary>>('GET', '/api/drafts', { query: { limit: 1, ...mailboxParam() } }).then(
      (p) => p.totalCount,
      () => 0,
    );
    void Promise.all([
      drafts,
      ...FOLDERS.map((f) => total(f.query)),
      api<{ items: MessageSummary[]; nextCursor: string | null }>('GET', '/api/messages/search', {
        query: { q: 'is:unread direction:inbound', limit: UNREAD_CAP, ...mailboxParam() },
      }).catch(() => ({ items: [], nextCursor: null })),
    ]).then(([draftCount, inbox, sent, held, screened, unread]) => {
      if (cancelled) return;
      const u = unread as { items: MessageSummary[]; nextCursor: string | null };
      setCounts({
        inbox: inbox as number,
        sent: sent as number,
        held: held as number,
        screened: screened as number,
        drafts: draftCount as number,
        unread: u.items.length,
        unreadMore: u.nextCursor !== null,
      });
    });
    return () => void (cancelled = true);
  }, [lastEvent.value, session.mailboxAddress.value]);
  return counts;
}

/** The folder list beside the messages: name, count, unread for the Inbox; Drafts after the Inbox. */
export function FolderNav(props: { current: NavFolder; counts: FolderCounts | null }) {
  const c = props.counts;
  const entries: { id: NavFolder; label: string }[] = [
    ...FOLDERS.slice(0, 1),
    ...(features.value.drafts ? [{ id: 'drafts' as const, label: 'Drafts' }] : []),
    ...FOLDERS.slice(1),
  ];
  return (
    <nav class="folders" aria-label="Folders">
      {entries.map((f) => (
        <a key={f.id} href={`#/${f.id}`} aria-current={props.current === f.id ? 'page' : undefined}>
          {f.label}
          <span class="n" aria-label={`${c ? c[f.id] : 0} ${f.id === 'drafts' ? 'drafts' : 'messages'}`}>
            {c ? c[f.id] : '…'}
          </span>
          {f.id === 'inbox' && c && c.unread > 0 && (
            <span class="unread-n" aria-label={`${c.unread}${c.unreadMore ? ' or more' : ''} unread`}>
              {c.unread}
              {c.unreadMore ? '+' : ''} unread
            </span>
          )}
        </a>
      ))}
    </nav>
  );
}
