import { useEffect, useState } from 'preact/hooks';
import { api, download, errorText } from '../api';
import { mailboxParam, session } from '../session';
import type { Attachment, MessageDetail } from '../types';

const TEXT_KINDS = /^(application\/pdf|application\/vnd\.openxmlformats-officedocument\.wordprocessingml\.document)$/i;
/** Images shown in the console (no SVG: it is a document, not a picture). */
const RASTER = /^image\/(png|jpeg|gif|webp)$/i;

/** The server finds PDF and DOCX by extension too when the type is generic. */
const TEXT_NAMES = /\.(pdf|docx)$/i;

/**
 * One attachment: its download, and a preview: an image inline (fetched with the token, shown
 * from a blob: URL), a PDF or DOCX as the text the server extracted from it.
 */
export function AttachmentItem(props: { path: string; a: Attachment; onError: (e: string) => void }) {
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
export function useInlineImages(m: MessageDetail, path: string): ReadonlyMap<string, string> | undefined {
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
