import { AppError } from '../../base/errors.js';

/**
 * MAX_RECIPIENTS, the recipients of one message, one rule for every way mail is written: HTTP and
 * MCP count to + cc + bcc at once, SMTP counts each RCPT TO as it arrives (submission and MX alike),
 * so the same message is refused the same way (TOO_MANY_RECIPIENTS: 400 / `452 4.5.3`, RFC 5321
 * §4.5.3.1.10). `count` includes the recipient being added.
 */
export function assertRecipientCap(count: number, max: number, counted = 'recipients'): void {
  if (count > max)
    throw new AppError('TOO_MANY_RECIPIENTS', `Too many recipients: ${count} (${counted}) exceeds ${max}.`);
}
