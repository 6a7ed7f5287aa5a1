import type { SMTPServerError } from 'smtp-server';
import { AppError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { isStorageUnavailable } from '../../storage/errors.js';

export interface SmtpReply { code: number; text: string }

/**
 * The one place the SMTP channel turns an error into a reply: an AppError answers its catalog
 * reply (RATE_LIMITED with the wait in the text), an unreachable database 451 4.3.0
 * (UNAVAILABLE), anything else 451 4.3.0 (INTERNAL, logged). A failure is never a 250.
 */
export function smtpReply(err: unknown, log: Logger, where: string): SmtpReply {
  let app: AppError;
  if (err instanceof AppError) app = err;
  else if (isStorageUnavailable(err)) app = new AppError('UNAVAILABLE', undefined, { cause: err });
  else {
    log.error('smtp.handler_failed', { where, err });
    app = new AppError('INTERNAL', undefined, { cause: err });
  }
  const [code, ...words] = app.smtpReply.split(' ');
  let text = words.join(' ');
  if (app.retryAfterSeconds !== undefined) text = `${text.replace(/,? try again later$/, '')}, try again in ${app.retryAfterSeconds} s`;
  return { code: Number(code), text };
}

/** The same reply as the error smtp-server hooks pass to their callback. */
export function smtpError(err: unknown, log: Logger, where: string): SMTPServerError {
  const reply = smtpReply(err, log, where);
  const error: SMTPServerError = new Error(reply.text);
  error.responseCode = reply.code;
  return error;
}
