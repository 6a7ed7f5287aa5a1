import EmailReplyParser from 'email-reply-parser';

/**
 * The new part of a reply: quoted history ("On … wrote:", "> " lines, "-----Original Message-----",
 * localized headers) and the signature removed, by email-reply-parser. Empty input gives "".
 */
export function replyTextOf(text: string): string {
  if (!text.trim()) return '';
  return new EmailReplyParser().parseReply(text).trim();
}
