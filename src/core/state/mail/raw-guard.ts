import { Transform, type TransformCallback } from 'node:stream';
import { AppError } from '../../base/errors.js';

/** Caps applied to every message received over SMTP, on the bytes as they arrive. */
export interface RawLimits {
  /** Whole message (RFC 1870 SIZE); past it the sender is cut off. */
  maxBytes: number;
  /** The top-level header section (Postfix's header_size_limit is 100 KiB). */
  maxHeaderBytes: number;
  /** Header fields of the top-level header section. */
  maxHeaderFields: number;
  /**
   * Octets a line may have before its CRLF (RFC 5322 §2.1.1: 998), on submission, where what is
   * accepted is relayed as it is; a server receiving for its own mailboxes stores longer lines.
   */
  maxLineOctets?: number;
}

/** RFC 5322 §2.1.1: a line is at most 998 characters before its CRLF. */
export const MAX_LINE_OCTETS = 998;

export const DEFAULT_HEADER_LIMITS = { maxHeaderBytes: 100 * 1024, maxHeaderFields: 1000 } as const;

const CR = 0x0d;
const LF = 0x0a;

/**
 * Passes message bytes through unchanged while checking them, so a violation is known the moment
 * it arrives rather than after the whole message was stored:
 * - size, on the bytes actually received (RFC 1870 §6.1: the SIZE parameter is only a claim);
 * - CR and LF only as CRLF (RFC 5321 §2.3.8). A bare LF or CR is how SMTP smuggling hides a
 *   second message behind `<LF>.<LF>` for a downstream server that ends DATA there;
 * - the size and field count of the top-level header section.
 * The first violation fails the stream with its AppError; `violation` keeps it for the caller.
 */
export class RawGuard extends Transform {
  bytes = 0;
  violation: AppError | null = null;
  private lastWasCr = false;
  private inHeader = true;
  private headerBytes = 0;
  private headerFields = 0;
  /** Octets since the last LF (a CR before it included). */
  private lineOctets = 0;
  /** Header scanning state: at the start of a line, and whether the last line was empty. */
  private atLineStart = true;

  constructor(private readonly limits: RawLimits) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.violation) return done();
    this.bytes += chunk.length;
    const problem =
      this.bytes > this.limits.maxBytes
        ? new AppError('PAYLOAD_TOO_LARGE')
        : (this.scanLineEndings(chunk) ??
          this.scanLineLengths(chunk) ??
          (this.inHeader ? this.scanHeader(chunk) : null));
    if (problem) {
      this.violation = problem;
      return done(problem);
    }
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    // A message ending in a lone CR is as bare as one in the middle.
    if (this.lastWasCr && !this.violation) return done((this.violation = new AppError('BARE_LINE_ENDING')));
    done();
  }

  private scanLineEndings(chunk: Buffer): AppError | null {
    if (this.lastWasCr && chunk[0] !== LF) return new AppError('BARE_LINE_ENDING');
    for (let i = chunk.indexOf(LF); i !== -1; i = chunk.indexOf(LF, i + 1)) {
      const before = i === 0 ? (this.lastWasCr ? CR : -1) : chunk[i - 1];
      if (before !== CR) return new AppError('BARE_LINE_ENDING');
    }
    for (let i = chunk.indexOf(CR); i !== -1; i = chunk.indexOf(CR, i + 1)) {
      if (i === chunk.length - 1) break; // decided by the next chunk
      if (chunk[i + 1] !== LF) return new AppError('BARE_LINE_ENDING');
    }
    this.lastWasCr = chunk[chunk.length - 1] === CR;
    return null;
  }

  private scanLineLengths(chunk: Buffer): AppError | null {
    const max = this.limits.maxLineOctets;
    if (max === undefined) return null;
    let start = 0;
    for (let i = chunk.indexOf(LF); i !== -1; i = chunk.indexOf(LF, i + 1)) {
      // The line's CR is counted with it; CR and LF are the two octets past the limit's 998.
      if (this.lineOctets + (i - start) + 1 > max + 2) return new AppError('LINE_TOO_LONG');
      this.lineOctets = 0;
      start = i + 1;
    }
    this.lineOctets += chunk.length - start;
    return this.lineOctets > max + 1 ? new AppError('LINE_TOO_LONG') : null;
  }

  /** Counts header bytes and fields until the empty line that ends the header section (RFC 5322 §2.1). */
  private scanHeader(chunk: Buffer): AppError | null {
    for (let i = 0; i < chunk.length && this.inHeader; i++) {
      const b = chunk[i]!;
      this.headerBytes++;
      if (this.atLineStart) {
        if (b === CR || b === LF) {
          this.inHeader = false; // the empty line: the body starts here
          break;
        }
        // A line starting with WSP continues the previous field (folding, RFC 5322 §2.2.3).
        if (b !== 0x20 && b !== 0x09) this.headerFields++;
        this.atLineStart = false;
      }
      if (b === LF) this.atLineStart = true;
    }
    if (this.headerBytes > this.limits.maxHeaderBytes || this.headerFields > this.limits.maxHeaderFields)
      return new AppError('HEADER_LIMIT');
    return null;
  }
}
