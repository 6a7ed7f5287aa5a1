import path from 'node:path';

/**
 * A stored filename: the last path segment only (clients send `C:\fakepath\x` or `../x`), with
 * CR/LF and every other control, the Unicode line and paragraph separators, and every bidi
 * control (the marks, embeddings, overrides and isolates of UAX #9 §2, U+061C included) removed,
 * because the name ends up in MIME headers and in other people's download dialogs, where
 * `invoice\u202Egpj.exe` reads as `invoiceexe.jpg`. Empty becomes `attachment`.
 */
export function sanitizeFilename(raw: string | null | undefined): string {
  const last = path.win32.basename(path.posix.basename(raw ?? ''));
  const cleaned = last
    .normalize('NFC')
    // eslint-disable-next-line no-control-regex -- removing control characters is the point
    .replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, '')
    .replace(/["\\/]/g, '_')
    .trim()
    .replace(/^\.+/, '');
  const name = cleaned === '' ? 'attachment' : cleaned;
  return truncateUtf16(name, 255);
}

// type/subtype per RFC 6838 §4.2; parameters (charset …) are dropped, the blob is bytes.
const MEDIA_TYPE_RE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** The declared media type if well-formed, else `application/octet-stream`. */
export function sanitizeContentType(raw: string | null | undefined): string {
  const type = (raw ?? '').split(';')[0]!.trim().toLowerCase();
  return MEDIA_TYPE_RE.test(type) ? type : 'application/octet-stream';
}

/** Shortens to `max` UTF-16 units without splitting a surrogate pair, keeping a short extension. */
function truncateUtf16(value: string, max: number): string {
  if (value.length <= max) return value;
  const ext = path.extname(value);
  const keep = ext.length <= 20 ? ext : '';
  let out = '';
  for (const ch of value.slice(0, value.length - keep.length)) {
    if (out.length + ch.length > max - keep.length) break;
    out += ch;
  }
  return out + keep;
}
