import type { SMTPServerAddress, SMTPServerAuthentication, SMTPServerSession } from 'smtp-server';
import { AppError } from '../../core/base/errors.js';
import type { Services } from '../../core/services.js';
import type { Submitter } from '../../core/flows/submission/submission.service.js';
import { DEFAULT_HEADER_LIMITS, MAX_LINE_OCTETS } from '../../core/state/mail/raw-guard.js';
import { MailboxSmtpServer } from './smtp-connection.js';
import { assertNoPlaintextAuth, commonOptions } from './server-options.js';
import { stateOf } from './session-state.js';
import { catalogReply, smtpError } from './replies.js';
import { intake } from './data-intake.js';
import { checkMailParameters, checkRcptParameters } from './envelope-params.js';
import type { TlsMaterial } from './tls-material.js';
import type { ClientLimits } from './client-limits.js';

/**
 * Submission on 587 (RFC 6409): STARTTLS, then AUTH PLAIN/LOGIN with an identity and a token,
 * then mail from that mailbox to anyone. Each hook parses, makes one core call and maps its error.
 */
export function createSubmissionServer(
  services: Services,
  hostname: string,
  tls: TlsMaterial,
  clients: ClientLimits,
): MailboxSmtpServer {
  const { config, log } = services;
  const core = services.transport.submission;
  // What is accepted here is relayed as it is, so no line may be longer than RFC 5322 allows.
  const limits = { maxBytes: config.SMTP_MAX_MESSAGE_BYTES, ...DEFAULT_HEADER_LIMITS, maxLineOctets: MAX_LINE_OCTETS };
  const submitter = (session: SMTPServerSession): Submitter | null => (session.user as Submitter | undefined) ?? null;
  const options = {
    ...commonOptions('submission', config, hostname, tls, clients, log),
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: config.SMTP_ALLOW_INSECURE_AUTH,
    // smtp-server sends this with 530 to MAIL FROM before AUTH: the catalog's AUTH_REQUIRED text.
    authRequiredMessage: catalogReply('AUTH_REQUIRED').text,
    onAuth(
      auth: SMTPServerAuthentication,
      session: SMTPServerSession,
      callback: (err: Error | null | undefined, response?: { user?: unknown }) => void,
    ) {
      if (auth.method !== 'PLAIN' && auth.method !== 'LOGIN')
        return callback(smtpError(new AppError('UNAUTHENTICATED'), log, 'auth'));
      stateOf('submission', session)
        .inTransaction(() => core.authenticate(auth.username ?? '', auth.password ?? '', session.remoteAddress))
        .then(
          (user) => callback(null, { user }),
          (err) => callback(smtpError(err, log, 'auth')),
        );
    },
    onMailFrom(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const refused = checkMailParameters('submission', address);
      if (refused) return callback(smtpError(refused, log, 'mail'));
      const state = stateOf('submission', session);
      state.beginTransaction(address.address);
      state
        .admitted(core.admit())
        .then(() => core.checkSender(submitter(session), address.address))
        .then(
          () => callback(),
          (err) => callback(smtpError(err, log, 'mail')),
        );
    },
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const refused = checkRcptParameters(address, session);
      if (refused) return callback(smtpError(refused, log, 'rcpt'));
      const accepted = session.envelope.rcptTo.map((r) => r.address);
      core.checkPolicyRecipient(submitter(session), address.address, accepted).then(
        () => callback(),
        (err) => callback(smtpError(err, log, 'rcpt')),
      );
    },
    onData(
      stream: import('smtp-server').SMTPServerDataStream,
      session: SMTPServerSession,
      callback: (err?: Error | null, message?: string) => void,
    ) {
      const state = stateOf('submission', session);
      const raw = intake(stream, session, limits, log);
      const user = submitter(session);
      const envelope = {
        mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
        rcptTo: session.envelope.rcptTo.map((r) => r.address),
      };
      const accepted = user
        ? state.inTransaction(() => core.accept(user, envelope, raw))
        : Promise.reject(new AppError('AUTH_REQUIRED'));
      accepted.then(
        (result) => {
          state.finishMessage(250);
          callback(
            null,
            result.status === 'pending_approval'
              ? `2.0.0 Held for approval as ${result.messageId}`
              : `2.0.0 Queued as ${result.messageId}`,
          );
        },
        (err) => {
          raw.resume();
          const error = smtpError(err, log, 'data');
          state.finishMessage(error.responseCode ?? 451);
          callback(error);
        },
      );
    },
  };
  assertNoPlaintextAuth(options, config);
  return new MailboxSmtpServer(options, { authNeedsTls: !config.SMTP_ALLOW_INSECURE_AUTH });
}
