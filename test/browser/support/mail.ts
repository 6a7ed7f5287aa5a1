import { randomBytes } from 'node:crypto';
import { deliverToMx } from '../../smtp/mx-peer.js';

/** A message from a remote MTA to our MX port (port 25's role), as the outside world sends it. */
export async function mailFromOutside(
  mxPort: number,
  to: string,
  subject: string,
  body: { text?: string; html?: string; alsoTo?: string[]; cc?: string[] },
): Promise<void> {
  const boundary = `b${randomBytes(6).toString('hex')}`;
  const head = [
    'From: Peer <peer@sender.example>',
    `To: ${[to, ...(body.alsoTo ?? [])].join(', ')}`,
    ...(body.cc?.length ? [`Cc: ${body.cc.join(', ')}`] : []),
    `Subject: ${subject}`,
    `Message-ID: <${randomBytes(8).toString('hex')}@sender.example>`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
  ];
  const raw = body.html
    ? [
        ...head,
        `Content-Type: multipart/alternative; boundary="${boundary}"`,
        '',
        `--${boundary}`,
        'Content-Type: text/plain; charset=utf-8',
        '',
        body.text ?? 'See the HTML part.',
        `--${boundary}`,
        'Content-Type: text/html; charset=utf-8',
        '',
        body.html,
        `--${boundary}--`,
        '',
      ]
    : [...head, 'Content-Type: text/plain; charset=utf-8', '', body.text ?? '', ''];
  await deliverToMx(mxPort, { from: 'peer@sender.example', to }, raw.join('\r\n'));
}
