import type { ForwardSource } from './forward.store.js';
import { htmlToText } from '../../state/extraction/html-text.js';
import { baseSubject } from '../delivery/threading.js';

/** Default subject of a forward: one "Fwd: " in front of the original's subject without reply prefixes. */
export function forwardSubject(subject: string): string {
  let s = baseSubject(subject);
  while (/^\s*(fwd?|wg)\s*:\s*/i.test(s)) s = s.replace(/^\s*(fwd?|wg)\s*:\s*/i, '');
  return `Fwd: ${s.trim()}`;
}

/**
 * The bodies of a forward: the caller's note, then the original under the block mail clients
 * write ("---------- Forwarded message ---------" with From, Date, Subject, To, Cc). The HTML
 * part exists when the note or the original has one; the text part always does.
 */
export function forwardBodies(
  source: ForwardSource,
  note: { bodyText: string | null; bodyHtml: string | null },
): { bodyText: string; bodyHtml: string | null } {
  const from = source.fromDisplayName ? `${source.fromDisplayName} <${source.fromAddress}>` : source.fromAddress;
  const fields: [string, string][] = [
    ['From', from],
    ['Date', source.at.toUTCString()],
    ['Subject', source.subject],
    ['To', source.toAddresses.join(', ')],
  ];
  if (source.ccAddresses.length > 0) fields.push(['Cc', source.ccAddresses.join(', ')]);
  const header = `---------- Forwarded message ---------\n${fields.map(([k, v]) => `${k}: ${v}`).join('\n')}`;
  const noteText = note.bodyText ?? (note.bodyHtml !== null ? htmlToText(note.bodyHtml) : '');
  const originalText = source.bodyText ?? (source.bodyHtml !== null ? htmlToText(source.bodyHtml) : '');
  const bodyText = `${noteText ? `${noteText}\n\n` : ''}${header}\n\n${originalText}`;
  if (note.bodyHtml === null && source.bodyHtml === null) return { bodyText, bodyHtml: null };
  const noteHtml = note.bodyHtml ?? (noteText ? `<p>${escapeHtml(noteText).replace(/\n/g, '<br>')}</p>` : '');
  const headerHtml = `<p>---------- Forwarded message ---------<br>${fields
    .map(([k, v]) => `${k}: ${escapeHtml(v)}`)
    .join('<br>')}</p>`;
  const originalHtml = source.bodyHtml ?? `<pre>${escapeHtml(originalText)}</pre>`;
  return { bodyText, bodyHtml: `${noteHtml}<div class="forwarded">${headerHtml}${originalHtml}</div>` };
}

const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
