import EmailReplyParser from 'email-reply-parser';

// email-reply-parser (2.3.9) reads lines bottom-up by reversing strings, one character at a time
// by concatenation: on a 10 KB body that alone was 0.4 of its 1.3 ms per message (bench/smtp
// --cpu-prof, port 25). Its parser class is not exported, so its reverse is replaced on the
// module the package itself loaded with one of the same result: UTF-16 code units in reverse
// order (test/unit/reply-text.test.ts compares both on every fixture). Only if the method exists.
const parserModule = (await import(
  new URL('./parser/emailparser.js', import.meta.resolve('email-reply-parser')).href
)) as { default: { prototype: Record<string, unknown> } };
const parser = parserModule.default.prototype;
/** The package's own reverse, kept for the equivalence test. */
export const packageStringReverse =
  typeof parser.stringReverse === 'function' ? (parser.stringReverse as (s: string) => string) : null;
if (packageStringReverse) parser.stringReverse = reverseCodeUnits;

/** `text` with its UTF-16 code units in reverse order (what the package's reverse returns). */
export function reverseCodeUnits(text: string): string {
  const units = Buffer.from(text, 'utf16le');
  units.reverse();
  // Reversing bytes also swapped the two bytes of each unit: swap them back.
  units.swap16();
  return units.toString('utf16le');
}

/**
 * The new part of a reply: quoted history ("On … wrote:", "> " lines, "-----Original Message-----",
 * localized headers) and the signature removed, by email-reply-parser. Empty input gives "".
 */
export function replyTextOf(text: string): string {
  if (!text.trim()) return '';
  return new EmailReplyParser().parseReply(text).trim();
}
