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
    const end = all.subarray(0, 2).toString() === '\r\n' ? 0 : all.indexOf('\r\n\r\n');
    if (end === -1 && this.headBytes <= MAX_HEADER_BYTES) return done();
    this.passing = true;
    this.head = [];
    if (end === -1) return done(null, all);
    const cut = end === 0 ? 0 : end + 2;
    done(null, Buffer.concat([this.stripOurs(all.subarray(0, cut)), all.subarray(cut)]));
  }

  override _flush(done: TransformCallback): void {
    if (!this.passing && this.head.length) {
      const all = Buffer.concat(this.head);
      return done(null, this.stripOurs(all));
    }
    done();
  }

  private stripOurs(header: Buffer): Buffer {
    const text = header.toString('latin1');
    const ended = text.endsWith('\r\n');
    const fields = (ended ? text.slice(0, -2) : text).split(/\r\n(?=[^ \t])/);
    const kept = fields.filter((f) => !this.isOurs(f));
    if (kept.length === fields.length) return header;
    return Buffer.from(kept.map((f) => `${f}\r\n`).join(''), 'latin1');
  }

  private isOurs(field: string): boolean {
    const m = /^authentication-results\s*:\s*(?:\([^)]*\)\s*)?([^\s;]+)/i.exec(field.replace(/\r\n[ \t]+/g, ' '));
    return !!m && m[1]!.toLowerCase() === this.authservId.toLowerCase();
  }
}
