import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { mailboxParam, session } from '../session';
import { features } from '../features';
import { when } from '../types';
import { useNewestLoad } from '../newest-load';

/** One entry of GET /api/mailbox/audit (docs/console.md, "Audit trail"). */
export interface AuditEntry {
  auditId: string;
  mailboxAddress: string;
  tokenId: string | null;
  tokenName?: string | null;
  /** The approver's address, for a decision through an approval link. */
  actorAddress?: string | null;
  channel: string;
  decision: string;
  rule: string | null;
  reason: string | null;
  recipientCount: number;
  messageId: string | null;
  subject?: string | null;
  recipients?: string[];
  createdAtTs: number;
}

const DECISIONS = ['accepted', 'refused', 'held', 'approved', 'rejected', 'expired', 'released'];
const CHANNELS = ['http', 'mcp', 'smtp', 'worker', 'approval-link'];

/**
 * The trail of send attempts and decisions in words: when, through which channel, what was
 * decided by which rule and why, about which mail to whom, by which token; filtered by decision
 * and channel on the server.
 */
export function Audit() {
  const domain = session.kind.value === 'domain' && !session.mailboxAddress.value && features.value.domainAudit;
  const [decision, setDecision] = useState('');
  const [channel, setChannel] = useState('');
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<{ items: AuditEntry[]; nextCursor: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const cursor = cursors[cursors.length - 1];
  const startLoad = useNewestLoad();
  useEffect(() => setCursors([undefined]), [decision, channel]);
  useEffect(() => {
    const newest = startLoad();
    api<{ items: AuditEntry[]; nextCursor: string | null }>(
      'GET',
      domain ? '/api/domain/audit' : '/api/mailbox/audit',
      { query: { limit: 50, cursor, decision, channel, ...(domain ? {} : mailboxParam()) } },
    ).then(
      (p) => {
        if (!newest()) return;
        setPage(p);
        setError(null);
      },
      (err) => newest() && setError(errorText(err)),
    );
  }, [cursor, domain, decision, channel]);
  const items = page?.items ?? [];
  return (
    <section aria-labelledby="audit-title" class="audit">
      <div class="toolbar">
        <h1 id="audit-title">Audit trail</h1>
        <label>
          Decision
          <select name="decision" value={decision} onChange={(e) => setDecision(e.currentTarget.value)}>
            <option value="">any</option>
            {DECISIONS.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
        <label>
          Channel
          <select name="channel" value={channel} onChange={(e) => setChannel(e.currentTarget.value)}>
            <option value="">any</option>
            {CHANNELS.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </label>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <table class="audit-table">
        <thead>
          <tr>
            <th class="c-time">Time</th>
            <th class="c-channel">Channel</th>
            <th class="c-decision">Decision</th>
            <th>Rule and reason</th>
            <th>Subject</th>
            <th>Recipients</th>
            <th class="c-token">Token or person</th>
          </tr>
        </thead>
        <tbody>
          {items.map((e) => (
            <tr key={e.auditId} data-decision={e.decision}>
              <td>{when(e.createdAtTs)}</td>
              <td>{e.channel}</td>
              <td>
                <span class={`tag decision-${e.decision}`}>{e.decision}</span>
              </td>
              <td>
                {e.rule && <code>{e.rule}</code>}
                {e.rule && e.reason ? ' — ' : ''}
                {e.reason ?? (e.rule ? '' : '—')}
              </td>
              <td>
                {e.messageId ? (
                  <a href={`#/message/${encodeURIComponent(e.messageId)}`}>{e.subject || '(no subject)'}</a>
                ) : (
                  '—'
                )}
              </td>
              <td>{e.recipients?.length ? e.recipients.join(', ') : `${e.recipientCount} recipient(s)`}</td>
              <td>
                {e.actorAddress
                  ? `${e.actorAddress} (approval link)`
                  : (e.tokenName ?? (e.tokenId ? e.tokenId : e.channel === 'worker' ? 'the server' : '—'))}
              </td>
            </tr>
          ))}
          {page && items.length === 0 && (
            <tr>
              <td colSpan={7} class="empty">
                No entries{decision || channel ? ' match these filters' : ' yet'}.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <div class="pager">
        <button disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
          ← Newer
        </button>
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
