import type { SMTPServerAddress, SMTPServerSession } from 'smtp-server';
import { AppError } from '../../core/base/errors.js';
import { isAscii } from '../../core/base/address.js';
import type { Listener } from './session-state.js';

/**
 * The MAIL FROM parameters each listener's EHLO advertises: SIZE (RFC 1870), BODY (RFC 6152),
 * SMTPUTF8 (RFC 6531), and on submission AUTH= (RFC 4954 §5). DSN and REQUIRETLS are not offered:
 * the service neither sends success notices nor holds a message to TLS on its next hop, and a
 * server must not take a request it will not honour.
 */
const MAIL_PARAMETERS: Record<Listener, ReadonlySet<string>> = {
  mx: new Set(['SIZE', 'BODY', 'SMTPUTF8']),
  submission: new Set(['SIZE', 'BODY', 'SMTPUTF8', 'AUTH']),
};

const isInternationalized = (address: string): boolean => !isAscii(address);

/**
 * MAIL FROM's parameters and address: one that is not advertised is 555 5.5.4 (RFC 5321
 * §4.1.1.11), a UTF-8 address without SMTPUTF8 553 5.6.7 (RFC 6531 §3.4).
 */
export function checkMailParameters(listener: Listener, address: SMTPServerAddress): AppError | null {
  const args = parameters(address);
  if (Object.keys(args).some((name) => !MAIL_PARAMETERS[listener].has(name)))
    return new AppError('UNSUPPORTED_PARAMETER');
  if (isInternationalized(address.address) && args.SMTPUTF8 === undefined)
    return new AppError('UTF8_ADDRESS_WITHOUT_SMTPUTF8');
  return null;
}

/** RCPT TO takes no parameter here (NOTIFY and ORCPT belong to DSN, which is not offered). */
export function checkRcptParameters(address: SMTPServerAddress, session: SMTPServerSession): AppError | null {
  if (Object.keys(parameters(address)).length > 0) return new AppError('UNSUPPORTED_PARAMETER');
  const utf8 = (session.envelope as { smtpUtf8?: boolean }).smtpUtf8 === true;
  if (isInternationalized(address.address) && !utf8) return new AppError('UTF8_ADDRESS_WITHOUT_SMTPUTF8');
  return null;
}

// smtp-server's `args` is `false` without parameters, else the names upper-cased.
const parameters = (address: SMTPServerAddress): Record<string, string | true> =>
  (address.args || {}) as Record<string, string | true>;
