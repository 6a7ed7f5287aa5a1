import { Transform, type TransformCallback } from 'node:stream';

/** Header sections larger than this pass unfiltered (RawGuard already refuses past 100 KiB). */
const MAX_HEADER_BYTES = 1024 * 1024;

/**
 * Removes, from the top-level header section only, every Authentication-Results field whose
 * authserv-id is ours (RFC 8601 §5: a border MTA removes such fields it did not add itself, so a
 * reader can trust the one we add). Fields of other authserv-ids, and the body, pass byte for
 * byte. The header section is held until its end (at most MAX_HEADER_BYTES), the rest streams.
 */
export class OurAuthResultsFilter extends Transform {
  private head: Buffer[] = [];
  private headBytes = 0;
  private passing = false;

  constructor(private readonly authservId: string) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.passing) return done(null, chunk);
    this.head.push(chunk);
    this.headBytes += chunk.length;
    const all = Buffer.concat(this.head);
    const cut = headerCut(all);
    if (cut === -1 && this.headBytes <= MAX_HEADER_BYTES) return done();
    this.passing = true;
    this.head = [];
    if (cut === -1) return done(null, all);
    done(null, Buffer.concat([stripOurs(all.subarray(0, cut), this.authservId), all.subarray(cut)]));
  }

  override _flush(done: TransformCallback): void {
    if (!this.passing && this.head.length) return done(null, stripOurs(Buffer.concat(this.head), this.authservId));
    done();
  }
}

/** The filter above applied to a message held whole. */
export function withoutOurAuthResults(message: Buffer, authservId: string): Buffer {
  const cut = headerCut(message);
  if (cut === -1) return message.length <= MAX_HEADER_BYTES ? stripOurs(message, authservId) : message;
  const head = stripOurs(message.subarray(0, cut), authservId);
  return head.length === cut ? message : Buffer.concat([head, message.subarray(cut)]);
}

/** Where the header fields end (before the empty line's CRLF), or -1 while no empty line is seen. */
function headerCut(bytes: Buffer): number {
  if (bytes.subarray(0, 2).toString() === '\r\n') return 0;
  const end = bytes.indexOf('\r\n\r\n');
  return end === -1 ? -1 : end + 2;
}

function stripOurs(header: Buffer, authservId: string): Buffer {
  const text = header.toString('latin1');
  const ended = text.endsWith('\r\n');
  const fields = (ended ? text.slice(0, -2) : text).split(/\r\n(?=[^ \t])/);
  const kept = fields.filter((f) => !isOurs(f, authservId));
  if (kept.length === fields.length) return header;
  return Buffer.from(kept.map((f) => `${f}\r\n`).join(''), 'latin1');
}

function isOurs(field: string, authservId: string): boolean {
  const m = /^authentication-results\s*:\s*(?:\([^)]*\)\s*)?([^\s;]+)/i.exec(field.replace(/\r\n[ \t]+/g, ' '));
  return !!m && m[1]!.toLowerCase() === authservId.toLowerCase();
}
