import { useState } from 'preact/hooks';
import { when, type MessageDetail } from '../types';

/** One message of a conversation: who, when, the snippet; expanded, the whole text. */
export function ThreadMessage(props: { m: MessageDetail; open: boolean }) {
  const { m } = props;
  const [open, setOpen] = useState(props.open);
  const who = m.direction === 'outbound' ? `${m.fromAddress} (this mailbox)` : m.fromDisplayName || m.fromAddress;
  const to = [...m.toAddresses, ...m.ccAddresses].join(', ');
  const body = m.bodyText ?? (m.bodyHtml ? '(HTML only: open the message to read it)' : '(no text part)');
  return (
    <li
      class={`thread-item ${m.direction}`}
      data-message-id={m.messageId}
      aria-label={`${who}, ${when(m.createdAtTs)}`}
    >
      <div class="thread-head">
        <strong>{who}</strong>
        <span class="meta">to {to || '—'}</span>
        <time class="meta" dateTime={new Date(m.createdAtTs).toISOString()}>
          {when(m.createdAtTs)}
        </time>
        {m.status === 'scheduled' && <span class="tag">scheduled {when(m.sendAtTs)}</span>}
        {m.approvalStatus === 'pending' && <span class="tag">awaiting approval</span>}
      </div>
      {open ? <pre class="body-text">{body}</pre> : <p class="snippet">{m.snippet || body.slice(0, 140)}</p>}
      <div class="toolbar">
        <button class="link" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Collapse' : 'Expand'}
        </button>
        <a href={`#/message/${encodeURIComponent(m.messageId)}`}>Open</a>
        {m.attachments.length > 0 && <span class="meta">📎 {m.attachments.map((a) => a.filename).join(', ')}</span>}
      </div>
    </li>
  );
}
