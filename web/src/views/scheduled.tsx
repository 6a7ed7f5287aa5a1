import { useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam } from '../session';
import { FolderNav } from '../folders';
import { usePaged } from '../paging';
import { when, type MessageSummary, type Page } from '../types';

/** DELETE /api/messages/{id}/schedule: idempotent; a 409 once it left (the server's sentence). */
export const cancelSend = (messageId: string) =>
  api<{ cancelled: boolean }>('DELETE', `/api/messages/${encodeURIComponent(messageId)}/schedule`, {
    query: mailboxParam(),
  });

/**
 * The Scheduled folder (GET /api/messages?status=scheduled): sends waiting for their sendAt, with
 * the time each leaves and "Cancel send". A cancelled one, or one that left, drops out of the list.
 */
export function Scheduled() {
  const list = usePaged(
    (cursor) =>
      api<Page<MessageSummary>>('GET', '/api/messages', {
        query: { status: 'scheduled', limit: 50, cursor, ...mailboxParam() },
      }),
    'scheduled',
  );
  const [notice, setNotice] = useState<string | null>(null);
  const cancel = async (m: MessageSummary) => {
    if (!confirm(`Cancel the send of “${m.subject || '(no subject)'}”? It will never leave.`)) return;
    try {
      await cancelSend(m.messageId);
      setNotice(`Cancelled: “${m.subject || '(no subject)'}” will not be sent.`);
      await list.reload();
    } catch (err) {
      list.setError(errorText(err));
    }
  };
  const items = list.page?.items ?? [];
  return (
    <div class="mail">
      <FolderNav current="scheduled" />
      <section aria-labelledby="scheduled-title" class="folder">
        <div class="toolbar">
          <h1 id="scheduled-title">Scheduled</h1>
          <span class="count">{list.page ? `${list.page.totalCount} waiting` : 'loading…'}</span>
        </div>
        {list.error && (
          <p class="error" role="alert">
            {list.error}
          </p>
        )}
        {notice && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        <table class="messages scheduled">
          <thead>
            <tr>
              <th>To</th>
              <th>Subject</th>
              <th class="send-col">Sends</th>
            </tr>
          </thead>
          <tbody>
            {items.map((m) => (
              <tr key={m.messageId} data-message-id={m.messageId}>
                <td class="who-col">{m.toAddress ?? '—'}</td>
                <td class="subject-col">
                  <a href={`#/message/${encodeURIComponent(m.messageId)}`}>{m.subject || '(no subject)'}</a>
                  {m.attachmentCount > 0 && <span title="attachments"> 📎{m.attachmentCount}</span>}
                  {m.snippet && <div class="snippet">{m.snippet}</div>}
                </td>
                <td class="send-col">
                  <time dateTime={m.sendAtTs ? new Date(m.sendAtTs).toISOString() : undefined}>{when(m.sendAtTs)}</time>
                  <button class="link danger" onClick={() => void cancel(m)}>
                    Cancel send
                  </button>
                </td>
              </tr>
            ))}
            {list.page && items.length === 0 && (
              <tr>
                <td colSpan={3} class="empty">
                  Nothing is scheduled. A send with sendAt (API, MCP or a draft) waits here until it leaves.
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
