import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { AppError } from '../../core/base/errors.js';
import type { Logger } from '../../core/base/logger.js';
import { RawGuard, type RawLimits } from '../../core/state/mail/raw-guard.js';
import { connectionOf } from './smtp-connection.js';
import { smtpReply } from './replies.js';

/**
 * Routes the DATA stream through the RawGuard. On a violation the rest of the message is
 * discarded rather than left unread (smtp-server ends DATA only once the stream is consumed);
 * an oversized message is answered 552 5.3.4 at once and the connection closed, so the server
 * stops reading instead of swallowing whatever the client still sends (RFC 5321 §4.5.3.1.10).
 */
export function intake(
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
  limits: RawLimits,
  log: Logger,
): RawGuard {
  const guard = new RawGuard(limits);
  guard.on('error', (err) => {
    stream.unpipe(guard);
    stream.resume();
    if (err instanceof AppError && err.code === 'PAYLOAD_TOO_LARGE') {
      const reply = smtpReply(err, log, 'data');
      connectionOf(session)?.abort(reply);
    }
  });
  stream.pipe(guard);
  return guard;
}
