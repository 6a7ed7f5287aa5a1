import type { SMTPServerError } from 'smtp-server';
import { AppError, type ErrorCode } from '../../core/base/errors.js';
import { isUnexpected, toAppError } from '../../core/base/error-mapping.js';
import type { Logger } from '../../core/base/logger.js';

export interface SmtpReply {
  code: number;
  text: string;
}

/**
 * The one place the SMTP channel renders a catalog error: the entry's reply, enhanced status code
 * included (RFC 3463), `{host}` replaced by the server's name, and on a 429-class refusal the wait
 * in the text (RATE_LIMITED, AUTH_THROTTLED). A failure is never a 250.
 */
export function replyOf(e: AppError, host = ''): SmtpReply {
  const [code, ...words] = e.smtpReply.replace(/\{host\} ?/, host ? `${host} ` : '').split(' ');
  let text = words.join(' ');
  if (e.retryAfterSeconds !== undefined)
    text = `${text.replace(/,? try again later$/, '')}, try again in ${e.retryAfterSeconds} s`;
  return { code: Number(code), text };
}

/** The reply of a catalog code the channel raises itself (protocol replies outside any hook). */
export const catalogReply = (code: ErrorCode, host = ''): SmtpReply => replyOf(new AppError(code), host);

/**
 * Anything thrown in a hook, as its reply: through the core's mapping (core/error-mapping.ts), so
 * an unreachable database is 451 4.3.0 (UNAVAILABLE) and anything unexpected 451 4.3.0 (INTERNAL,
 * logged).
 */
export function smtpReply(err: unknown, log: Logger, where: string): SmtpReply {
  const e = toAppError(err);
  if (isUnexpected(e)) log.error('smtp.handler_failed', { where, err });
  return replyOf(e);
}

/** The same reply as the error smtp-server hooks pass to their callback. */
export function smtpError(err: unknown, log: Logger, where: string): SMTPServerError {
  const reply = smtpReply(err, log, where);
  const error: SMTPServerError = new Error(reply.text);
  error.responseCode = reply.code;
  return error;
}
