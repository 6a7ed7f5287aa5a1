import { randomBytes } from 'node:crypto';
import { rfc5322Date } from '../../state/mail/raw-headers.js';
import type { InboundMessage } from '../inbound/inbound.store.js';

export interface Failure {
  address: string;
  reply: string;
  expired?: boolean;
}

export interface BounceInput {
  hostname: string;
  mailboxId: string;
  /** The envelope sender of the failed message: the bounce goes to its mailbox. */
  sender: string;
  original: { internetMessageId: string | null; subject: string; headers: string; queuedAt: Date };
  failures: Failure[];
  at: Date;
}

/** The enhanced status of a reply (RFC 3463), 5.4.7 when delivery time expired, else by class. */
function statusOf(f: Failure): string {
  if (f.expired) return '5.4.7';
  const m = /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/.exec(f.reply);
  if (m && m[1]!.startsWith('5')) return m[1]!;
  return '5.0.0';
}

/**
 * A delivery status notification (RFC 3464) in a multipart/report (RFC 6522): a human-readable
 * part, the machine-readable message/delivery-status, and the original header section
 * (text/rfc822-headers). Auto-Submitted (RFC 3834) keeps responders from answering it, and
 * In-Reply-To/References thread it with the message it reports on.
 */
export function buildBounce(b: BounceInput): { raw: Buffer; inbound: Omit<InboundMessage, 'rawBlobKey'> } {
  const boundary = `dsn-${randomBytes(12).toString('hex')}`;
  const messageId = `<dsn-${randomBytes(12).toString('hex')}@${b.hostname}>`;
  const from = `mailer-daemon@${b.hostname}`;
  const subject = 'Undelivered Mail Returned to Sender';
  const lines = b.failures.map((f) => `<${f.address}>: ${f.reply}`);
  const text = [
    `This is the mail system at ${b.hostname}.`,
    '',
    `Your message${b.original.subject ? ` "${b.original.subject}"` : ''} could not be delivered to ${b.failures.length === 1 ? 'this recipient' : 'these recipients'}:`,
    '',
    ...lines,
    '',
    'The header of the original message is attached.',
  ].join('\r\n');
  const perMessage = [`Reporting-MTA: dns; ${b.hostname}`, `Arrival-Date: ${rfc5322Date(b.original.queuedAt)}`];
  const perRecipient = b.failures.map((f) =>
    [
      `Final-Recipient: rfc822; ${f.address}`,
      'Action: failed',
      `Status: ${statusOf(f)}`,
      `Diagnostic-Code: smtp; ${f.reply.replace(/[\r\n]+/g, ' ')}`,
      `Last-Attempt-Date: ${rfc5322Date(b.at)}`,
    ].join('\r\n'),
  );
  const refs = b.original.internetMessageId
    ? [`In-Reply-To: ${b.original.internetMessageId}`, `References: ${b.original.internetMessageId}`]
    : [];
  const raw = [
    `From: Mail Delivery System <${from}>`,
    `To: <${b.sender}>`,
    `Subject: ${subject}`,
    `Date: ${rfc5322Date(b.at)}`,
    `Message-ID: ${messageId}`,
    ...refs,
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    text,
    '',
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    '',
    perMessage.join('\r\n'),
    '',
    perRecipient.join('\r\n\r\n'),
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    '',
    b.original.headers.trimEnd(),
    '',
    `--${boundary}--`,
    '',
  ].join('\r\n');
  return {
    raw: Buffer.from(raw, 'utf8'),
    inbound: {
      mailboxId: b.mailboxId,
      from,
      fromDisplayName: 'Mail Delivery System',
      to: [b.sender],
      subject,
      bodyText: text,
      bodyHtml: null,
      internetMessageId: messageId,
      inReplyTo: b.original.internetMessageId,
      references: b.original.internetMessageId ? [b.original.internetMessageId] : [],
      receivedAt: b.at,
      sentAt: b.at,
      authResults: null,
    },
  };
}

/** The header section of a message (for text/rfc822-headers). */
export function headerSection(raw: Buffer): string {
  const end = raw.indexOf('\r\n\r\n');
  return raw.subarray(0, end === -1 ? Math.min(raw.length, 64 * 1024) : Math.min(end, 64 * 1024)).toString('utf8');
}
