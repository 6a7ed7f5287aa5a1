import nodemailer from 'nodemailer';
import { expect } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';

// What the MTA interop tests (postfix.test.ts, exim.test.ts) share: handing mail to the peer that
// sends it, reading what the service stored, and a message built as a remote MUA would.

/** Hands a message to the sending MTA listening on `port` over SMTP, as a remote user's MUA would. */
export async function viaSender(
  port: number,
  envelope: { from: string; to: string[] },
  raw: Buffer | string,
): Promise<void> {
  const t = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  try {
    await t.sendMail({ envelope, raw });
  } finally {
    t.close();
  }
}

/** The stored-mail reads of one test server. */
export function storedMail(server: () => TestServer) {
  const q = rowsOf(server);
  return {
    q,
    /** The id of the inbound message with `subject` in the mailbox, once stored (30 s). */
    inboundWith: (mailboxId: string, subject: string) =>
      waitFor(
        async () =>
          (
            await q`select id from message where mailbox_id = ${mailboxId} and direction = 'inbound' and subject = ${subject}`
          )[0]?.id as string | undefined,
        30_000,
        `${subject} stored`,
      ),
    /** GET /api/messages/{id}/raw as the mailbox's token sees it. */
    rawOf: async (token: string, id: string): Promise<Buffer> => {
      const res = await fetch(`${server().url}/api/messages/${id}/raw`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      return Buffer.from(await res.arrayBuffer());
    },
  };
}

/** The body of a raw message (after the blank line). */
export const bodyOf = (raw: Buffer) => raw.subarray(raw.indexOf('\r\n\r\n') + 4);

/** A message as a remote MUA writes it: 8-bit UTF-8 text unless other headers are given. */
export const message = (o: { from: string; to: string; subject: string; body: string; headers?: string[] }) =>
  Buffer.from(
    [
      `From: ${o.from}`,
      `To: ${o.to}`,
      `Subject: ${o.subject}`,
      'Date: Tue, 01 Dec 2026 10:00:00 +0000',
      `Message-ID: <${Math.random().toString(36).slice(2)}@sender.example>`,
      'MIME-Version: 1.0',
      ...(o.headers ?? ['Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit']),
      '',
      o.body,
    ].join('\r\n'),
  );
