import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api';
import { useNewestLoad } from '../newest-load';
import { mailboxParam, session } from '../session';
import { lastEvent } from '../live';
import { features } from '../features';
import { when, type MessageDetail, type MessageSummary, type Page } from '../types';
import { FolderNav } from '../folders';
import type { AuditEntry } from './audit';

/** A held message with what a person needs to decide it: the mail itself and why it was held. */
interface HeldItem {
  m: MessageDetail;
  held: AuditEntry | null;
}

/**
 * The Held folder as an approval queue: each message held by the approval gate with its
 * recipients, body, attachments, the rule that held it and the token that sent it (its audit
 * entry). Approve and reject take a reason, are idempotent on the server (the first decision
 * wins), and a decided message leaves the queue on the live event, whoever decided it.
 */
export function Approvals() {
  const [items, setItems] = useState<HeldItem[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [approvers, setApprovers] = useState<string[]>([]);
  const startLoad = useNewestLoad();
  const load = async () => {
    const newest = startLoad();
    try {
      // Who else gets each held send by mail, with a one-time link (the policy's approverAddresses).
      void api<{ approverAddresses?: string[] }>('GET', '/api/mailbox/policy', { query: mailboxParam() }).then(
        (p) => newest() && setApprovers(p.approverAddresses ?? []),
        () => newest() && setApprovers([]),
      );
      const page = await api<Page<MessageSummary>>('GET', '/api/messages', {
        query: { approval: 'pending', limit: 100, ...mailboxParam() },
      });
      const audit = features.value.mailboxAudit
        ? await api<{ items: AuditEntry[] }>('GET', '/api/mailbox/audit', {
            query: { decision: 'held', limit: 200, ...mailboxParam() },
          }).catch(() => ({ items: [] as AuditEntry[] }))
        : { items: [] as AuditEntry[] };
      const details = await Promise.all(
        page.items.map((s) =>
          api<MessageDetail>('GET', `/api/messages/${encodeURIComponent(s.messageId)}`, { query: mailboxParam() }),
        ),
      );
      if (!newest()) return;
      setItems(details.map((m) => ({ m, held: audit.items.find((e) => e.messageId === m.messageId) ?? null })));
      setError(null);
    } catch (err) {
      if (newest()) setError(errorText(err));
    }
  };
  useEffect(() => void load(), [lastEvent.value, session.mailboxAddress.value, features.value.mailboxAudit]);
  const decide = async (m: MessageDetail, decision: 'approve' | 'reject', reason: string) => {
    setError(null);
    try {
      await api('POST', `/api/messages/${encodeURIComponent(m.messageId)}/${decision}`, {
        // The decision body is the reason alone: the message id names the mailbox.
        body: reason.trim() ? { reason: reason.trim() } : {},
      });
      setNotice(`${decision === 'approve' ? 'Approved' : 'Rejected'}: “${m.subject || '(no subject)'}”.`);
      await load();
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <div class="mail">
      <FolderNav current="held" />
      <section aria-labelledby="approvals-title" class="folder">
        <h1 id="approvals-title">Held for approval</h1>
        <p class="hint">
          Mail the outbound policy held before it left. Approve sends it; reject discards it. Deciding needs the
          MailboxApprove scope (a domain token grants it).
        </p>
        {approvers.length > 0 && (
          <p class="hint">
            Each held message is also mailed to {approvers.join(', ')} with a one-time approval link (the mailbox
            policy's approverAddresses).
          </p>
        )}
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
        {items && items.length === 0 && <p class="empty">Nothing is waiting for approval.</p>}
        <ul class="held" aria-label="Held messages">
          {(items ?? []).map((item) => (
            <HeldCard key={item.m.messageId} item={item} decide={decide} />
          ))}
        </ul>
      </section>
    </div>
  );
}

function HeldCard(props: {
  item: HeldItem;
  decide: (m: MessageDetail, d: 'approve' | 'reject', reason: string) => Promise<void>;
}) {
  const { m, held } = props.item;
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const run = async (d: 'approve' | 'reject') => {
    setBusy(true);
    await props.decide(m, d, reason);
    setBusy(false);
  };
  const recipients = [...m.toAddresses, ...m.ccAddresses, ...m.bccAddresses];
  return (
    <li class="held-card" aria-label={m.subject || '(no subject)'} data-message-id={m.messageId}>
      <h2>
        <a href={`#/message/${encodeURIComponent(m.messageId)}`}>{m.subject || '(no subject)'}</a>
      </h2>
      <dl class="headers">
        <dt>To</dt>
        <dd>{recipients.join(', ') || '—'}</dd>
        <dt>Held</dt>
        <dd>{when(m.createdAtTs)}</dd>
        <dt>Rule</dt>
        <dd>{held?.rule ?? '—'}</dd>
        {held?.reason && (
          <>
            <dt>Why</dt>
            <dd>{held.reason}</dd>
          </>
        )}
        <dt>Sent by</dt>
        <dd>{held ? (held.tokenName ?? held.tokenId ?? '—') : '—'}</dd>
        {m.attachments.length > 0 && (
          <>
            <dt>Attached</dt>
            <dd>
              {m.attachments
                .map((a) => `${a.filename || 'attachment'} (${Math.ceil(a.sizeBytes / 1024)} KiB)`)
                .join(', ')}
            </dd>
          </>
        )}
      </dl>
      <pre class="body-text">{m.bodyText ?? '(HTML only: open the message to read it)'}</pre>
      <label>
        Reason (optional, kept in the audit trail)
        <input name="reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
      <div class="toolbar">
        <button disabled={busy} onClick={() => void run('approve')}>
          Approve and send
        </button>
        <button class="danger" disabled={busy} onClick={() => void run('reject')}>
          Reject
        </button>
      </div>
    </li>
  );
}
