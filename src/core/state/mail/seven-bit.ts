import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { isAscii } from '../../base/address.js';

/** Whether any octet of `raw` is above 127: such a message needs 8BITMIME (RFC 6152) or a 7-bit form. */
export const hasEightBitOctets = (raw: Buffer): boolean => raw.some((b) => b > 0x7f);

/**
 * Whether delivering needs SMTPUTF8 (RFC 6531 §3.4): an internationalized address in the envelope,
 * or UTF-8 in the header section (RFC 6532), which no downgrade turns into something a server
 * without the extension may take.
 */
export function needsSmtpUtf8(envelope: { from: string; to: string[] }, raw: Buffer): boolean {
  if ([envelope.from, ...envelope.to].some((a) => !isAscii(a))) return true;
  const end = raw.indexOf('\r\n\r\n');
  return hasEightBitOctets(end === -1 ? raw : raw.subarray(0, end));
}

/**
 * The same message with every leaf part that is not already base64 or quoted-printable re-encoded
 * as quoted-printable, which also breaks lines longer than 998 octets (RFC 5322 §2.1.1): the form
 * for a server that does not offer 8BITMIME (RFC 6152 §3). Multipart structure, boundaries and
 * every other header are kept as they were (mailsplit rebuilds the untouched parts byte for byte).
 */
export async function toSevenBit(raw: Buffer): Promise<Buffer> {
  // Imported when first needed: few relays lack 8BITMIME, and every role that builds the services
  // would otherwise load it (~12 MB resident).
  const { Joiner, Rewriter, Splitter } = await import('mailsplit');
  const rewriter = new Rewriter(
    (node) => !node.multipart && node.encoding !== 'base64' && node.encoding !== 'quoted-printable',
  );
  rewriter.on('node', ({ decoder, encoder }) => decoder.pipe(encoder));
  const joiner = new Joiner();
  const [out] = await Promise.all([buffer(joiner), pipeline(Readable.from([raw]), new Splitter(), rewriter, joiner)]);
  return out;
}
