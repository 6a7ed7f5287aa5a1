import { useEffect, useState } from 'preact/hooks';
import { api } from './api';
import { mailboxParam, session } from './session';
import { lastEvent } from './live';
import { features } from './features';
import type { DraftSummary, MessageSummary, Page, ThreadSummary } from './types';

/** The folders of the console that are one filter of GET /api/messages. */
export type Folder = 'inbox' | 'sent' | 'scheduled' | 'held' | 'screened';

export const FOLDERS: { id: Folder; label: string; query: Record<string, string> }[] = [
  { id: 'inbox', label: 'Inbox', query: { direction: 'inbound' } },
  { id: 'sent', label: 'Sent', query: { direction: 'outbound' } },
  // Sends waiting for their sendAt (docs/workflow.md, "Scheduled sends").
  { id: 'scheduled', label: 'Scheduled', query: { status: 'scheduled' } },
  { id: 'held', label: 'Held', query: { approval: 'pending' } },
  // Inbound mail the screening held back from the agents (docs/screening.md).
  { id: 'screened', label: 'Screened', query: { screening: 'held' } },
];

/** At most this many unread are counted (search has no total); beyond, the count reads "100+". */
const UNREAD_CAP = 100;

export type FolderCounts = Record<Folder | 'drafts' | 'needs_human' | 'awaiting_reply', number> & {
  unread: number;
  unreadMore: boolean;
};

const totalOf = <T>(path: string, query: Record<string, string>): Promise<number> =>
  api<Page<T>>('GET', path, { query: { ...query, limit: 1, ...mailboxParam() } }).then(
    (p) => p.totalCount,
    () => 0,
  );

/**
 * Counts per folder: the list's totalCount (limit=1 reads one row and the mailbox counters; the
 * drafts' and the threads' own lists for those), and unread from the search API's `is:unread`,
 * refreshed on every live event (draft.* and thread.state-changed among them).
 */
export function useFolderCounts(): FolderCounts | null {
  const [counts, setCounts] = useState<FolderCounts | null>(null);
  useEffect(() => {
    let cancelled = false;
    void (async () => {
      const [folders, drafts, needsHuman, awaitingReply, unread] = await Promise.all([
        Promise.all(FOLDERS.map((f) => totalOf<MessageSummary>('/api/messages', f.query))),
        totalOf<DraftSummary>('/api/drafts', {}),
        features.value.threads ? totalOf<ThreadSummary>('/api/threads', { state: 'needs_human' }) : 0,
        features.value.threads ? totalOf<ThreadSummary>('/api/threads', { state: 'awaiting_reply' }) : 0,
        api<{ items: MessageSummary[]; nextCursor: string | null }>('GET', '/api/messages/search', {
          query: { q: 'is:unread direction:inbound', limit: UNREAD_CAP, ...mailboxParam() },
        }).catch(() => ({ items: [], nextCursor: null })),
      ]);
      if (cancelled) return;
      const byFolder = Object.fromEntries(FOLDERS.map((f, i) => [f.id, folders[i] ?? 0])) as Record<Folder, number>;
      setCounts({
        ...byFolder,
        drafts,
        needs_human: needsHuman,
        awaiting_reply: awaitingReply,
        unread: unread.items.length,
        unreadMore: unread.nextCursor !== null,
      });
    })();
    return () => void (cancelled = true);
  }, [lastEvent.value, session.mailboxAddress.value, features.value.threads]);
  return counts;
}
