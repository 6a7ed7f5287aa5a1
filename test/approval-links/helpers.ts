import { request } from 'node:http';
import type { ApiResponse, TestServer } from '../support/harness.js';
import { waitFor } from '../delivery/helpers.js';

/** The credential of an approval page URL (`…/#/approve/<credential>`) found in a text. */
export function credentialIn(text: string, base: string): string {
  const at = text.indexOf(`${base}/#/approve/`);
  if (at === -1) throw new Error(`no approval link under ${base} in: ${text.slice(0, 400)}`);
  return /^[^\s]+/.exec(text.slice(at + base.length + '/#/approve/'.length))![0];
}

/** The notice a hosted approver got for a subject, read from their mailbox as they would. */
export async function noticeInMailbox(
  server: TestServer,
  approverToken: string,
  subject: string,
): Promise<{ messageId: string; bodyText: string; from: string; subject: string }> {
  const summary = await waitFor(
    async () => {
      const list = await server.api(approverToken).get('/api/messages?limit=50');
      return (list.body.data.items as any[]).find((m) => m.subject === `Approval needed: ${subject}`);
    },
    20_000,
    `the notice "${subject}" in the approver's mailbox`,
  );
  const detail = await server.api(approverToken).get(`/api/messages/${summary.messageId}`);
  return {
    messageId: detail.body.data.messageId,
    bodyText: detail.body.data.bodyText,
    from: detail.body.data.fromAddress,
    subject: detail.body.data.subject,
  };
}

/** The public link routes, without any token. */
export const viewLink = (server: TestServer, credential: string) =>
  server.api().post('/api/approval-links/view', { credential });
export const decideLink = (
  server: TestServer,
  credential: string,
  decision: 'approve' | 'reject',
  reason?: string,
): Promise<ApiResponse> =>
  server.api().post('/api/approval-links/decision', { credential, decision, ...(reason ? { reason } : {}) });

/** A POST from another loopback address (its own credential-failure budget). */
export function postFrom(
  server: TestServer,
  localAddress: string,
  path: string,
  body: unknown,
): Promise<{ status: number; body: any }> {
  const url = new URL(server.url + path);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
