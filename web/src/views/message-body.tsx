import { useEffect, useState } from 'preact/hooks';
import { errorText, fetchText } from '../api';
import { MailFrame } from '../mail-frame';
import type { MessageDetail } from '../types';
import { useInlineImages } from './message-attachments';

export type Tab = 'html' | 'text' | 'headers' | 'raw';

const TABS: { id: Tab; label: string }[] = [
  { id: 'html', label: 'HTML' },
  { id: 'text', label: 'Text' },
  { id: 'headers', label: 'Headers' },
  { id: 'raw', label: 'Raw' },
];

/** The body four ways: the sandboxed HTML, the text part, the header section, the whole source. */
export function BodyTabs(props: { m: MessageDetail; path: string; tab: Tab; setTab: (t: Tab) => void }) {
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
