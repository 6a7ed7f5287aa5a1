import { useEffect, useState } from 'preact/hooks';
import { api, download, errorText } from '../api';
import { mailboxParam, session } from '../session';
import { go } from '../router';
import { MailFrame } from '../mail-frame';
import { when, type Attachment, type MessageDetail } from '../types';
import { TrustBadge } from './trust';
import { fetchText } from '../api';

type Tab = 'html' | 'text' | 'headers' | 'raw';

/** One message: headers, trust, body (HTML sandboxed), attachments, deliveries. Keys: r reply, u back. */
export function MessageView(props: { messageId: string }) {
  const [m, setM] = useState<MessageDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tab, setTab] = useState<Tab | null>(null);
  const path = `/api/messages/${encodeURIComponent(props.messageId)}`;

  useEffect(() => {
    let cancelled = false;
    setM(null);
    (async () => {
      try {
        const detail = await api<MessageDetail>('GET', path, { query: mailboxParam() });
        if (cancelled) return;
        setM(detail);
        if (!detail.isRead) {
          await api('PUT', `${path}/read-state`, { body: { isRead: true, ...mailboxParam() } });
          setM({ ...detail, isRead: true });
        }
      } catch (err) {
        if (!cancelled) setError(errorText(err));
      }
    })();
    return () => void (cancelled = true);
  }, [props.messageId]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.target as HTMLElement).closest('input, textarea, select')) return;
      if (e.key === 'r') go('reply', props.messageId);
      else if (e.key === 'u') go('inbox');
      else return;
      e.preventDefault();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [props.messageId]);

  const act = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      setError(errorText(err));
    }
  };
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!m) return <p>Loading…</p>;
  return (
    <article class="message" aria-labelledby="message-subject">
      <div class="toolbar">
        <a href="#/inbox">← Inbox</a>
        <button onClick={() => go('reply', m.messageId)}>Reply</button>
        <a href={`#/thread/${encodeURIComponent(m.threadId)}`}>Thread</a>
        <button
          onClick={() =>
            act(async () => {
              await api('PUT', `${path}/read-state`, { body: { isRead: !m.isRead, ...mailboxParam() } });
              setM({ ...m, isRead: !m.isRead });
            })
          }
        >
          Mark {m.isRead ? 'unread' : 'read'}
        </button>
        <button
          class="danger"
          onClick={() =>
            act(async () => {
              if (!confirm('Delete this message?')) return;
              await api('DELETE', path, { query: mailboxParam() });
              go('inbox');
            })
          }
        >
          Delete
        </button>
        {m.rawContentPath && (
          <button class="link" onClick={() => act(() => download(`${path}/raw`, `${m.messageId}.eml`))}>
            Download .eml
          </button>
        )}
      </div>
      <h1 id="message-subject">{m.subject || '(no subject)'}</h1>
      <dl class="headers">
        <dt>From</dt>
        <dd>{m.fromDisplayName ? `${m.fromDisplayName} <${m.fromAddress}>` : m.fromAddress}</dd>
        <dt>To</dt>
        <dd>{m.toAddresses.join(', ') || '—'}</dd>
        {m.ccAddresses.length > 0 && (
          <>
            <dt>Cc</dt>
            <dd>{m.ccAddresses.join(', ')}</dd>
          </>
        )}
        {m.bccAddresses.length > 0 && (
          <>
            <dt>Bcc</dt>
            <dd>{m.bccAddresses.join(', ')}</dd>
          </>
        )}
        <dt>Date</dt>
        <dd>{when(m.createdAtTs)}</dd>
        {(m.origin !== undefined || m.authentication !== undefined) && (
          <>
            <dt>Trust</dt>
            <dd>
              <TrustBadge origin={m.origin} authenticated={m.authenticated} authentication={m.authentication} />
            </dd>
          </>
        )}
        {m.deliveryStatus && (
          <>
            <dt>Delivery</dt>
            <dd>
              {m.deliveryStatus}
              {m.deliveries.map((d) => (
                <div key={d.address} class="delivery">
                  {d.kind} {d.address}: {d.status}
                  {d.remoteReply ? ` (${d.remoteReply})` : ''}
                </div>
              ))}
            </dd>
          </>
        )}
      </dl>
      {m.attachments.length > 0 && (
        <ul class="attachments" aria-label="Attachments">
          {m.attachments.map((a) => (
            <AttachmentItem key={a.attachmentId} path={path} a={a} onError={setError} />
          ))}
        </ul>
      )}
      <BodyTabs key={m.messageId} m={m} path={path} tab={tab ?? (m.bodyHtml ? 'html' : 'text')} setTab={setTab} />
    </article>
  );
}

const TABS: { id: Tab; label: string }[] = [
  { id: 'html', label: 'HTML' },
  { id: 'text', label: 'Text' },
  { id: 'headers', label: 'Headers' },
  { id: 'raw', label: 'Raw' },
];

/** The body four ways: the sandboxed HTML, the text part, the header section, the whole source. */
function BodyTabs(props: { m: MessageDetail; path: string; tab: Tab; setTab: (t: Tab) => void }) {
  const { m, tab } = props;
  const [raw, setRaw] = useState<string | null>(null);
  const [rawError, setRawError] = useState<string | null>(null);
  const inline = useInlineImages(m, props.path);
  useEffect(() => {
    if ((tab !== 'raw' && tab !== 'headers') || raw !== null || !m.rawContentPath) return;
    fetchText(`${props.path}/raw`).then(setRaw, (err) => setRawError(errorText(err)));
  }, [tab, m.messageId]);
  const noRaw =
    'No raw source is kept for this message (mail written through the API or the console is stored as its parts).';
  return (
    <div class="tabs">
      <div role="tablist" aria-label="Message body">
        {TABS.map((t) => (
          <button
            key={t.id}
            role="tab"
            id={`tab-${t.id}`}
            aria-selected={tab === t.id}
            aria-controls="tab-panel"
            onClick={() => props.setTab(t.id)}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id="tab-panel" aria-labelledby={`tab-${tab}`}>
        {tab === 'html' &&
          (m.bodyHtml ? (
            <MailFrame html={m.bodyHtml} inline={inline} />
          ) : (
            <p class="hint">This message has no HTML part.</p>
          ))}
        {tab === 'text' && <pre class="body-text">{m.bodyText ?? '(no text part)'}</pre>}
        {tab === 'headers' &&
          (m.rawContentPath ? (
            <pre class="source">{raw === null ? (rawError ?? 'Loading…') : headerSection(raw)}</pre>
          ) : (
            <>
              <p class="hint">{noRaw} The stored fields:</p>
              <pre class="source">{storedHeaders(m)}</pre>
            </>
          ))}
        {tab === 'raw' &&
          (m.rawContentPath ? (
            <pre class="source">{raw === null ? (rawError ?? 'Loading…') : raw}</pre>
          ) : (
            <p class="hint">{noRaw}</p>
          ))}
      </div>
    </div>
  );
}

/** The header section of a source: everything before the first empty line. */
const headerSection = (raw: string): string => raw.split(/\r?\n\r?\n/, 1)[0] ?? raw;

function storedHeaders(m: MessageDetail): string {
  const lines = [
    `From: ${m.fromDisplayName ? `${m.fromDisplayName} <${m.fromAddress}>` : m.fromAddress}`,
    `To: ${m.toAddresses.join(', ')}`,
    ...(m.ccAddresses.length ? [`Cc: ${m.ccAddresses.join(', ')}`] : []),
    ...(m.bccAddresses.length ? [`Bcc: ${m.bccAddresses.join(', ')}`] : []),
    `Subject: ${m.subject}`,
    `Date: ${new Date(m.createdAtTs).toUTCString()}`,
  ];
  return lines.join('\n');
}

const TEXT_KINDS = /^(application\/pdf|application\/vnd\.openxmlformats-officedocument\.wordprocessingml\.document)$/i;
/** Images shown in the console (no SVG: it is a document, not a picture). */
const RASTER = /^image\/(png|jpeg|gif|webp)$/i;

/** The server finds PDF and DOCX by extension too when the type is generic. */
const TEXT_NAMES = /\.(pdf|docx)$/i;

/**
 * One attachment: its download, and a preview: an image inline (fetched with the token, shown
 * from a blob: URL), a PDF or DOCX as the text the server extracted from it.
 */
function AttachmentItem(props: { path: string; a: Attachment; onError: (e: string) => void }) {
  const { a } = props;
  const href = `${props.path}/attachments/${encodeURIComponent(a.attachmentId)}`;
  const [image, setImage] = useState<string | null>(null);
  const [text, setText] = useState<string | null>(null);
  const isImage = RASTER.test(a.contentType);
  const hasText = TEXT_KINDS.test(a.contentType) || TEXT_NAMES.test(a.filename);
  useEffect(() => {
    if (!isImage) return;
    let url: string | null = null;
    fetchBlob(href).then(
      (blob) => setImage((url = URL.createObjectURL(blob))),
      () => undefined,
    );
    return () => void (url && URL.revokeObjectURL(url));
  }, [href]);
  return (
    <li>
      <button
        class="link"
        onClick={() => download(href, a.filename || 'attachment').catch((e) => props.onError(errorText(e)))}
      >
        {a.filename || 'attachment'}
      </button>{' '}
      <span class="meta">
        {a.contentType}, {Math.ceil(a.sizeBytes / 1024)} KiB
      </span>
      {image && <img class="preview" src={image} alt={`Preview of ${a.filename}`} />}
      {hasText && text === null && (
        <button
          class="link"
          onClick={() =>
            api<{ text: string; truncated: boolean }>('GET', `${href}/text`, { query: mailboxParam() }).then(
              (r) => setText(r.text + (r.truncated ? '\n…(cut at the server’s limit)' : '')),
              (e) => props.onError(errorText(e)),
            )
          }
        >
          Show text
        </button>
      )}
      {text !== null && (
        <pre class="preview-text" aria-label={`Text of ${a.filename}`}>
          {text}
        </pre>
      )}
    </li>
  );
}

async function fetchBlob(path: string): Promise<Blob> {
  const r = await fetch(path, { headers: { Authorization: `Bearer ${session.token.value}` } });
  if (!r.ok) throw new Error(`HTTP ${r.status}`);
  return r.blob();
}

/** Inline images bigger than this together are left as unresolved cid: references. */
const INLINE_BUDGET_BYTES = 8 * 1024 * 1024;

/**
 * The image parts the HTML names by `cid:`, fetched once with the session's token and handed to the
 * frame as data: URLs: the frame itself may load nothing (its CSP allows data: images only).
 */
function useInlineImages(m: MessageDetail, path: string): ReadonlyMap<string, string> | undefined {
  const [inline, setInline] = useState<ReadonlyMap<string, string> | undefined>(undefined);
  useEffect(() => {
    const html = m.bodyHtml?.toLowerCase() ?? '';
    let budget = INLINE_BUDGET_BYTES;
    const parts = m.attachments.filter((a) => {
      if (!a.contentId || !RASTER.test(a.contentType) || a.sizeBytes > budget) return false;
      if (!html.includes(`cid:${a.contentId.toLowerCase()}`)) return false;
      budget -= a.sizeBytes;
      return true;
    });
    if (parts.length === 0) return;
    let cancelled = false;
    Promise.all(
      parts.map(async (a) => {
        const blob = await fetchBlob(`${path}/attachments/${encodeURIComponent(a.attachmentId)}`).catch(() => null);
        const url = blob && (await dataUrlOf(new Blob([blob], { type: a.contentType })).catch(() => null));
        return [a.contentId!.toLowerCase(), url] as const;
      }),
    ).then((found) => {
      if (!cancelled) setInline(new Map(found.filter((f): f is [string, string] => f[1] !== null)));
    });
    return () => void (cancelled = true);
  }, [m.messageId]);
  return inline;
}

const dataUrlOf = (blob: Blob): Promise<string> =>
  new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result as string);
    reader.onerror = () => reject(reader.error ?? new Error('unreadable'));
    reader.readAsDataURL(blob);
  });
