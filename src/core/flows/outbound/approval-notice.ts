import { randomBytes } from 'node:crypto';
import { htmlToText } from '../../state/extraction/html-text.js';
import type { HeldMessageRow } from '../policy/approval-link.store.js';
import type { TransferMessage } from './external-delivery.js';

/** Characters of the held message's text quoted in the notice; the page shows the whole of it. */
export const NOTICE_EXCERPT_CHARS = 1_000;

/** One line of a field the agent wrote (subject, names): no line breaks or controls to forge lines with. */
const oneLine = (s: string, max = 300) =>
  s
    .replace(/[\p{Cc}\p{Cf}\u2028\u2029]+/gu, ' ')
    .trim()
    .slice(0, max);

/** `<base>/#/approve/<credential>`: the credential in the fragment, which no server, log or Referer sees. */
export const approvalPageUrl = (publicBaseUrl: string, credential: string): string =>
  `${publicBaseUrl.replace(/\/+$/, '')}/#/approve/${credential}`;

export interface NoticeInput {
  message: HeldMessageRow;
  approverAddress: string;
  url: string;
  expiresAt: Date;
  /** SMTP_HOSTNAME: the notice's From domain and Message-ID. */
  hostname: string;
  at: Date;
}

/**
 * The notice an approver gets when a send is held (docs/workflow.md, "Approval links"): what was
 * held (subject, recipients, the start of the text), by which rule, from which token, until when,
 * and the link. Plain text only. It comes from `approvals@<SMTP_HOSTNAME>`, not from the held
 * mailbox, so neither a reply quoting it nor a bounce of it ever reaches the agent that sent the
 * mail; it is marked Auto-Submitted (RFC 3834 §5) so responders leave it alone.
 */
export function noticeMessage(n: NoticeInput): TransferMessage {
  const m = n.message;
  const subject = oneLine(m.subject) || '(no subject)';
  const body = m.body_text ?? (m.body_html ? htmlToText(m.body_html) : '');
  const excerpt = body.slice(0, NOTICE_EXCERPT_CHARS);
  const field = (name: string, value: string) => `${`${name}:`.padEnd(10)}${value}`;
  const list = (a: readonly string[]) => a.map((x) => oneLine(x, 320)).join(', ');
  const text = [
    `A message from ${m.mailbox_address} is held until a person approves it. You are one of its approvers.`,
    '',
    field('Subject', subject),
    field('To', list(m.to_addresses) || '-'),
    ...(m.cc_addresses.length ? [field('Cc', list(m.cc_addresses))] : []),
    ...(m.bcc_addresses.length ? [field('Bcc', list(m.bcc_addresses))] : []),
    field('Sent by', m.token_name ? `token "${oneLine(m.token_name, 100)}"` : 'no token (SMTP submission)'),
    field('Held by', m.rule ? `${m.rule}${m.reason ? ` (${oneLine(m.reason, 500)})` : ''}` : 'the approval policy'),
    field('Expires', `${n.expiresAt.toISOString()} (rejected then if nobody decides)`),
    '',
    'Read it whole and approve or reject it here (the link works once, without signing in):',
    n.url,
    '',
    `The message begins, as the agent wrote it${body.length > excerpt.length ? ' (cut)' : ''}:`,
    '----------------------------------------------------------------------',
    excerpt,
    '----------------------------------------------------------------------',
    '',
    `You get this because the outbound policy of ${m.mailbox_address} lists ${n.approverAddress} as an approver.`,
    'Anyone holding this mail can decide the message: do not forward it.',
  ].join('\n');
  const at = n.at;
  return {
    id: m.id,
    mailboxId: m.mailbox_id,
    domainId: m.domain_id,
    fromAddress: `approvals@${n.hostname}`,
    fromDisplayName: 'Approval requests',
    to: [n.approverAddress],
    cc: [],
    subject: `Approval needed: ${subject}`.slice(0, 400),
    bodyText: text,
    bodyHtml: null,
    internetMessageId: `<approval-${randomBytes(12).toString('hex')}@${n.hostname}>`,
    inReplyTo: null,
    references: [],
    sentAt: at,
    createdAt: at,
    rawBlobKey: null,
    autoSubmitted: 'auto-generated',
    attachments: [],
  };
}
