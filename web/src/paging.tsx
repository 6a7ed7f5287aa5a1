import { useEffect, useState } from 'preact/hooks';
import { errorText } from './api';
import { lastEvent } from './live';
import { useNewestLoad } from './newest-load';
import { session } from './session';
import type { Page } from './types';

export interface Paged<T> {
  page: Page<T> | null;
  error: string | null;
  setError: (e: string | null) => void;
  reload: () => Promise<void>;
  pager: preact.JSX.Element;
}

/**
 * One keyset-paged list (the cursor of each page kept for Back), loaded again on every live event
 * and whenever `key` changes (a filter: back to page one).
 */
export function usePaged<T>(load: (cursor: string | undefined) => Promise<Page<T>>, key: string): Paged<T> {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<Page<T> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const cursor = cursors[cursors.length - 1];
  const startLoad = useNewestLoad();
  const reload = async () => {
    const newest = startLoad();
    try {
      const next = await load(cursor);
      if (!newest()) return;
      setPage(next);
      setError(null);
    } catch (err) {
      if (newest()) setError(errorText(err));
    }
  };
  useEffect(() => setCursors([undefined]), [key]);
  useEffect(() => void reload(), [cursor, key, session.mailboxAddress.value, lastEvent.value]);
  const pager = (
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
  );
  return { page, error, setError, reload, pager };
}
