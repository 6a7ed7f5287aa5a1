import type { SMTPServerOptions, SMTPServerSession } from 'smtp-server';
import type { Config } from '../../config/config.js';
import type { Logger } from '../../core/base/logger.js';
import { AppError } from '../../core/base/errors.js';
import type { TlsMaterial } from './tls-material.js';
import type { ClientLimits } from './client-limits.js';
import { openSession, stateOf, type Listener } from './session-state.js';
import { smtpError } from './replies.js';
import { connectionOf } from './smtp-connection.js';

/**
 * Options both listeners share: STARTTLS with TLS 1.2 or later only, SIZE announced, enhanced
 * status codes (RFC 2034), 8BITMIME and SMTPUTF8 (internationalized addresses are stored and shown
 * as sent), no DSN and no REQUIRETLS (envelope-params.ts says why), no XCLIENT/XFORWARD (a client
 * must not rewrite who it is), connection, idle and shutdown limits, and the session-level hooks
 * (per-client slots, session span and metric).
 */
export function commonOptions(
  listener: Listener,
  config: Readonly<Config>,
  hostname: string,
  tls: TlsMaterial,
  clients: ClientLimits,
  log: Logger,
): SMTPServerOptions {
  return {
    name: hostname,
    banner: listener === 'submission' ? 'mailbox-service submission' : 'mailbox-service',
    key: tls.key,
    cert: tls.cert,
    minVersion: 'TLSv1.2',
    size: config.SMTP_MAX_MESSAGE_BYTES,
    hideENHANCEDSTATUSCODES: false,
    hideSMTPUTF8: false,
    hideDSN: true,
    hideREQUIRETLS: true,
    disabledCommands: ['XCLIENT', 'XFORWARD'],
    useXClient: false,
    useXForward: false,
    maxClients: config.SMTP_MAX_CONNECTIONS,
    socketTimeout: config.SMTP_IDLE_TIMEOUT,
    // SIGTERM: sessions in flight get this long, then 421 4.3.2 (MailboxSmtpConnection.send).
    closeTimeout: config.SMTP_CLOSE_TIMEOUT,
    disableReverseLookup: true,
    logger: false,
    onConnect(session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const state = openSession(listener, session);
      if (!clients.acquire(session.remoteAddress)) {
        state.refused = true;
        return callback(smtpError(new AppError('TOO_MANY_CONNECTIONS'), log, 'connect'));
      }
      state.holdsSlot = true;
      // The idle timeout never fires for a client dribbling a byte at a time, so the session as a
      // whole ends at SMTP_SESSION_TIMEOUT (RFC 3463 4.4.2: connection dropped).
      state.deadline = setTimeout(() => connectionOf(session)?.abort('SESSION_TIMEOUT'), config.SMTP_SESSION_TIMEOUT);
      state.deadline.unref();
      callback();
    },
    onClose(session: SMTPServerSession) {
      const state = stateOf(listener, session);
      if (state.holdsSlot) clients.release(session.remoteAddress);
      state.holdsSlot = false;
      state.close();
    },
  };
}

/**
 * Refuses a submission configuration that would take credentials in the clear by accident:
 * without SMTP_ALLOW_INSECURE_AUTH, STARTTLS must be on and offered and AUTH must wait for it;
 * with it, the listener must be bound to loopback (a development setup, never a deployment).
 */
export function assertNoPlaintextAuth(options: SMTPServerOptions, config: Readonly<Config>): void {
  const disabled = (options.disabledCommands ?? []).map((c) => c.toUpperCase());
  if (!config.SMTP_ALLOW_INSECURE_AUTH) {
    const problems = [
      options.allowInsecureAuth && 'allowInsecureAuth is on',
      options.authOptional && 'AUTH is optional',
      (options.hideSTARTTLS || disabled.includes('STARTTLS')) && 'STARTTLS is off',
      (!options.key || !options.cert) && 'there is no TLS certificate',
    ].filter(Boolean);
    if (problems.length)
      throw new Error(
        `refusing to start SMTP submission: it would accept AUTH in plaintext (${problems.join(', ')}); set SMTP_ALLOW_INSECURE_AUTH=true only for local development`,
      );
  } else if (!['127.0.0.1', '::1', 'localhost'].includes(config.HOST)) {
    throw new Error(
      `refusing to start SMTP submission: SMTP_ALLOW_INSECURE_AUTH=true accepts passwords in plaintext and HOST=${config.HOST} is not loopback; set HOST=127.0.0.1 or unset SMTP_ALLOW_INSECURE_AUTH`,
    );
  }
}
