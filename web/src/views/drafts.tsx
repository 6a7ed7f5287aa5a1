import { api } from '../api';
import { mailboxParam } from '../session';
import { FolderNav } from '../folders';
import { usePaged } from '../paging';
import { when, type DraftSummary, type Page } from '../types';
import { shortWhen } from './inbox';

const PAGE_SIZE = 50;

/**
 * The Drafts folder (GET /api/drafts): drafts an agent prepared or a person saved, newest first,
 * keyset-paged like the other folders and refreshed live (draft.created, draft.updated,
 * draft.deleted). Opening one opens the compose form filled with it (#/draft/{draftId}).
 */
export function Drafts() {
  const { page, error, pager } = usePaged(
    (cursor) =>
      api<Page<DraftSummary>>('GET', '/api/drafts', { query: { limit: PAGE_SIZE, cursor, ...mailboxParam() } }),
    'drafts',
  );

  const items = page?.items ?? [];
  return (
    <div class="mail">
      <FolderNav current="drafts" />
      <section aria-labelledby="drafts-title" class="folder">
        <div class="toolbar">
          <h1 id="drafts-title">Drafts</h1>
          <a href="#/compose">New message</a>
          <span class="count">{page ? `${page.totalCount} draft(s)` : 'loading…'}</span>
        </div>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <table class="messages drafts">
          <thead>
            <tr>
              <th>To</th>
              <th>Subject</th>
              <th class="date-col">Saved</th>
            </tr>
          </thead>
          <tbody>
            {items.map((d) => (
              <tr key={d.draftId} data-draft-id={d.draftId}>
                <td class="who-col">{d.toAddress.length ? d.toAddress.join(', ') : '(no recipient yet)'}</td>
                <td class="subject-col">
                  <a href={`#/draft/${encodeURIComponent(d.draftId)}`}>{d.subject || '(no subject)'}</a>
                  {d.attachments.length > 0 && <span title="attachments"> 📎{d.attachments.length}</span>}
                  {d.parentMessageId && <span class="tag">reply</span>}
                  {d.sendAtTs !== null && <span class="tag">send {when(d.sendAtTs)}</span>}
                  {d.snippet && <div class="snippet">{d.snippet}</div>}
                </td>
                <td class="date-col">
                  <time dateTime={new Date(d.updatedAtTs).toISOString()} title={when(d.updatedAtTs)}>
                    {shortWhen(d.updatedAtTs)}
                  </time>
                </td>
              </tr>
            ))}
            {page && items.length === 0 && (
              <tr>
                <td colSpan={3} class="empty">
                  No drafts. Save one from Compose, or let an agent prepare one (create_draft) for you to send.
                </td>
              </tr>
            )}
          </tbody>
        </table>
        {pager}
      </section>
    </div>
  );
}
