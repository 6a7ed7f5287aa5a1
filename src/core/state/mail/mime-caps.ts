import { Splitter } from '@zone-eu/mailsplit';
import { AppError } from '../../base/errors.js';

/** Structure caps against MIME bombs: parsing stops with MIME_LIMIT past any of them. */
export const MIME_LIMITS = {
  /** MIME nodes in the whole message, nested ones included. */
  maxParts: 500,
  /** Nesting depth of multiparts and attached messages. */
  maxDepth: 32,
  /** Header bytes of any one MIME node. */
  maxPartHeaderBytes: 100 * 1024,
  /**
   * Header bytes of all MIME nodes together. Decoding headers (RFC 2047 encoded words above all:
   * mailsplit and mailparser each decode a part's filename) costs 0.4 s of CPU per MiB on a quiet
   * machine and over 1 s on a loaded one; without a cap, 300 parts at the per-node cap (29 MB of
   * encoded words, under the message size limit) took 5 s. 500 parts of ordinary headers (~300
   * bytes each) need 150 KiB.
   */
  maxTotalHeaderBytes: 512 * 1024,
} as const;

/** The caps mailsplit enforces itself (EMAXLEN): node count and one node's header size. */
export const SPLITTER_LIMITS = { maxHeadSize: MIME_LIMITS.maxPartHeaderBytes, maxChildNodes: MIME_LIMITS.maxParts };

/** A chunk mailsplit emits; a `node` chunk is a MIME node whose headers were just read. */
export type SplitChunk = { type: string; parentNode?: SplitChunk | null | false; _headerlen?: number };

/**
 * The caps mailsplit does not know: nesting depth and the header bytes of all nodes together,
 * counted node by node as the splitter reads them (before anything decodes the headers).
 */
export class MimeCapCounter {
  private headerBytes = 0;

  /** The cap `node` breaks, or null. */
  violation(node: SplitChunk): AppError | null {
    let depth = 0;
    for (let n = node.parentNode; n; n = n.parentNode) depth++;
    if (depth > MIME_LIMITS.maxDepth)
      return new AppError('MIME_LIMIT', `MIME nesting deeper than ${MIME_LIMITS.maxDepth}.`);
    this.headerBytes += node._headerlen ?? 0;
    if (this.headerBytes > MIME_LIMITS.maxTotalHeaderBytes)
      return new AppError('MIME_LIMIT', `MIME headers larger than ${MIME_LIMITS.maxTotalHeaderBytes} bytes in all.`);
    return null;
  }
}

/** mailsplit reports its caps as EMAXLEN; anything else unparsable is a MIME_LIMIT too. */
export function asMimeError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  if ((err as { code?: string })?.code === 'EMAXLEN') return new AppError('MIME_LIMIT', (err as Error).message);
  return err;
}

/**
 * The MIME structure of `raw` against MIME_LIMITS, decoding nothing: the verdict parseMime would
 * reach (MIME_LIMIT), from the same splitter and counter, for a fraction of its cost. Queued
 * intake refuses with it before the 250 and parses behind it.
 */
export function checkMimeStructure(raw: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const splitter = new Splitter(SPLITTER_LIMITS);
    const caps = new MimeCapCounter();
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      splitter.destroy();
      reject(asMimeError(err));
    };
    const events = splitter as unknown as NodeJS.EventEmitter; // its declarations type only 'data'
    splitter.on('data', (chunk: SplitChunk) => {
      if (settled || chunk.type !== 'node') return;
      const violation = caps.violation(chunk);
      if (violation) fail(violation);
    });
    events.on('error', fail);
    events.on('end', () => {
      if (settled) return;
      settled = true;
      resolve();
    });
    splitter.end(raw);
  });
}
