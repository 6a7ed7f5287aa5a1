import { features } from './features';
import { FOLDERS, useFolderCounts, type FolderCounts } from './folder-counts';

export { FOLDERS, type Folder } from './folder-counts';

/** An entry of the folder list: a folder (#/inbox …) or the threads in one state (#/threads/needs_human). */
interface Entry {
  id: keyof FolderCounts & string;
  label: string;
  href: string;
  unit: string;
}

const folder = (id: Entry['id'], label: string): Entry => ({ id, label, href: `#/${id}`, unit: 'messages' });

/**
 * The folder list beside the messages: name, count, unread for the Inbox; Drafts after the Inbox,
 * Scheduled when the API lists scheduled sends; below, the conversations a person is wanted for
 * (threads by state, GET /api/threads?state=).
 */
export function FolderNav(props: { current: string }) {
  const c = useFolderCounts();
  const [inbox, sent, scheduled, ...rest] = FOLDERS.map((f) => folder(f.id, f.label));
  const entries: Entry[] = [
    inbox!,
    ...(features.value.drafts ? [{ ...folder('drafts', 'Drafts'), unit: 'drafts' }] : []),
    sent!,
    ...(features.value.scheduled ? [scheduled!] : []),
    ...rest,
  ];
  const threads: Entry[] = features.value.threads
    ? [
        { id: 'needs_human', label: 'Needs human', href: '#/threads/needs_human', unit: 'conversations' },
        { id: 'awaiting_reply', label: 'Awaiting reply', href: '#/threads/awaiting_reply', unit: 'conversations' },
      ]
    : [];
  const link = (f: Entry) => (
    <a key={f.id} href={f.href} aria-current={props.current === f.id ? 'page' : undefined}>
      {f.label}
      <span class="n" aria-label={`${c ? c[f.id] : 0} ${f.unit}`}>
        {c ? c[f.id] : '…'}
      </span>
      {f.id === 'inbox' && c && c.unread > 0 && (
        <span class="unread-n" aria-label={`${c.unread}${c.unreadMore ? ' or more' : ''} unread`}>
          {c.unread}
          {c.unreadMore ? '+' : ''} unread
        </span>
      )}
    </a>
  );
  return (
    <nav class="folders" aria-label="Folders">
      {entries.map(link)}
      {threads.length > 0 && (
        <>
          <span class="folders-group">Conversations</span>
          {threads.map(link)}
          <a href="#/threads" aria-current={props.current === 'threads' ? 'page' : undefined}>
            All conversations
          </a>
        </>
      )}
    </nav>
  );
}
