import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam } from '../session';
import { lastEvent } from '../live';
import { when, type MessageSummary, type Page } from '../types';

/**
 * The approval queue (docs/contract.md, Outbound policy): shown only when the server lists the approve
 * route. Approve and reject are idempotent on the server; the first decision wins.
 */
export function Approvals() {
  const [page, setPage] = useState<Page<MessageSummary> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    api<Page<MessageSummary>>('GET', '/api/messages', {
      query: { approval: 'pending', limit: 100, ...mailboxParam() },
    }).then(setPage, (err) => setError(errorText(err)));
  useEffect(() => void load(), [lastEvent.value]);
  const decide = async (id: string, decision: 'approve' | 'reject') => {
    setError(null);
    try {
      await api('POST', `/api/messages/${encodeURIComponent(id)}/${decision}`, { body: { ...mailboxParam() } });
      await load();
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <section aria-labelledby="approvals-title">
      <h1 id="approvals-title">Waiting for approval</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <table>
        <tbody>
          {(page?.items ?? []).map((m) => (
            <tr key={m.messageId}>
              <td>To {m.toAddress}</td>
              <td>
                <a href={`#/message/${encodeURIComponent(m.messageId)}`}>{m.subject || '(no subject)'}</a>
              </td>
              <td>{when(m.createdAtTs)}</td>
              <td>
                <button onClick={() => decide(m.messageId, 'approve')}>Approve</button>
                <button class="danger" onClick={() => decide(m.messageId, 'reject')}>
                  Reject
                </button>
              </td>
            </tr>
          ))}
          {page && page.items.length === 0 && (
            <tr>
              <td class="empty">Nothing is waiting.</td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
