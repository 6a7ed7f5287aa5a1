/**
 * Header surgery on a submitted message before it leaves (RFC 6409 §8): Bcc is removed, so blind
 * recipients stay blind (RFC 5322 §3.6.3), every Resent-* field too (docs/contract.md, "Sender integrity
 * and inbound trust": a Resent-Bcc would leak and a Resent-From would name an author we never
 * checked), and a missing Message-ID or Date is added, since an
 * MSA completes what the client left out. The body is untouched, byte for byte.
 */
export function prepareForTransfer(raw: Buffer, fill: { messageId: string | null; date: Date }): Buffer {
  const end = headerEnd(raw);
  // The header section without its last CRLF: the join below ends every field with one, and the
  // body keeps the empty line that separates it (`body` starts with that line's CRLF).
  const header = raw.subarray(0, end).toString('latin1').replace(/\r\n$/, '');
  const body = raw.subarray(end);
  const fields = header.split(/\r\n(?=[^ \t])/).filter((f) => f.length > 0);
  const kept = fields.filter((f) => !/^(bcc|resent-[a-z0-9-]*)\s*:/i.test(f));
  const has = (name: string) => kept.some((f) => new RegExp(`^${name}\\s*:`, 'i').test(f));
  const added: string[] = [];
  if (!has('message-id') && fill.messageId) added.push(`Message-ID: ${fill.messageId}`);
  if (!has('date')) added.push(`Date: ${rfc5322Date(fill.date)}`);
  if (added.length + kept.length === 0) return body;
  return Buffer.concat([Buffer.from([...added, ...kept].join('\r\n') + '\r\n', 'latin1'), body]);
}

/**
 * The top-level header fields of `raw` the way mailparser's `headerLines` gives them (`key` the
 * lower-case name, `line` the whole field, folding kept), read without parsing the body.
 */
export function topHeaderLines(raw: Buffer): { key: string; line: string }[] {
  const header = raw.subarray(0, headerEnd(raw)).toString('utf8');
  const out: { key: string; line: string }[] = [];
  for (const field of header.split(/\r\n(?=[^ \t])/)) {
    const colon = field.indexOf(':');
    if (colon > 0) out.push({ key: field.slice(0, colon).trim().toLowerCase(), line: field.replace(/\r\n$/, '') });
  }
  return out;
}

/** Offset where the body starts: after the first empty line (or the whole input when there is none). */
function headerEnd(raw: Buffer): number {
  if (raw.subarray(0, 2).toString() === '\r\n') return 0;
  const i = raw.indexOf('\r\n\r\n');
  return i === -1 ? raw.length : i + 2;
}

/** RFC 5322 §3.3 date-time in UTC. */
export const rfc5322Date = (d: Date): string => d.toUTCString().replace(/GMT$/, '+0000');
