import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import type { Services } from '../../core/services.js';
import { DEFAULT_HEADER_LIMITS } from '../../core/state/mail/raw-guard.js';
import { MailboxSmtpServer } from './smtp-connection.js';
import { commonOptions } from './server-options.js';
import { stateOf } from './session-state.js';
import { smtpError } from './replies.js';
import { intake } from './data-intake.js';
import { checkMailParameters, checkRcptParameters } from './envelope-params.js';
import type { TlsMaterial } from './tls-material.js';
import type { ClientLimits } from './client-limits.js';

/**
 * Inbound MX on 25: mail from the world for hosted addresses only. No AUTH here (submission is
 * 587), opportunistic STARTTLS (RFC 3207), every recipient checked against the hosted addresses,
 * so the server can never relay.
 */
export function createMxServer(
  services: Services,
  hostname: string,
  tls: TlsMaterial,
  clients: ClientLimits,
): MailboxSmtpServer {
  const { config, log } = services;
  const core = services.transport.inbound;
  const limits = { maxBytes: config.SMTP_MAX_MESSAGE_BYTES, ...DEFAULT_HEADER_LIMITS };
  const common = commonOptions('mx', config, hostname, tls, clients, log);
  return new MailboxSmtpServer(
    {
      ...common,
      disabledCommands: [...(common.disabledCommands ?? []), 'AUTH'],
      authOptional: true,
      onMailFrom(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
        const refused = checkMailParameters('mx', address);
        if (refused) return callback(smtpError(refused, log, 'mail'));
        const state = stateOf('mx', session);
        state.beginTransaction(address.address);
        state.admitted(core.admit()).then(
          () => callback(),
          (err) => callback(smtpError(err, log, 'mail')),
        );
      },
      onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
        const refused = checkRcptParameters(address, session);
        if (refused) return callback(smtpError(refused, log, 'rcpt'));
        const state = stateOf('mx', session);
        state
          .inTransaction(() => core.checkRecipient(address.address, state.recipients.size))
          .then(
            (r) => {
              state.recipients.set(r.address, r);
              callback();
            },
            (err) => callback(smtpError(err, log, 'rcpt')),
          );
      },
      onData(
        stream: SMTPServerDataStream,
        session: SMTPServerSession,
        callback: (err?: Error | null, message?: string) => void,
      ) {
        const state = stateOf('mx', session);
        const raw = intake(stream, session, limits, log);
        const envelope = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          recipients: [...state.recipients.values()],
          clientAddress: session.remoteAddress,
          helo: session.hostNameAppearsAs || '',
          tls: session.secure,
        };
        state
          .inTransaction(() => core.accept(envelope, raw))
          .then(
            (accepted) => {
              state.finishMessage(250);
              callback(null, accepted.queued ? `2.0.0 Queued as ${accepted.queueId}` : '2.0.0 Delivered');
            },
            (err) => {
              raw.resume();
              const error = smtpError(err, log, 'data');
              state.finishMessage(error.responseCode ?? 451);
              callback(error);
            },
          );
      },
    },
    { authNeedsTls: false },
  );
}
