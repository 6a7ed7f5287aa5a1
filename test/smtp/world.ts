import nodemailer from 'nodemailer';
import { deliveredAfter } from '../support/intake-queue.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, type StartTestOptions, type TestServer } from '../support/harness.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';
import { sql } from '../../src/storage/database.js';
import { SmtpWire } from './smtp-wire.js';

export const SMTP_HOST = 'mail.test';

/** The service with the smtp role on free ports (both listeners), named mail.test for TLS. */
export function startSmtpTestServer(o: StartTestOptions = {}): Promise<TestServer> {
  return startTestServer({
    ...o,
    roles: o.roles ?? ['api', 'smtp'],
    env: { SMTP_SUBMISSION_PORT: '0', SMTP_MX_PORT: '0', SMTP_HOSTNAME: SMTP_HOST, ...o.env },
  });
}

export const submissionPort = (s: TestServer): number => s.runtime.smtpPorts.submission!;
export const mxPort = (s: TestServer): number => s.runtime.smtpPorts.mx!;

/** A raw submission session after STARTTLS and AUTH as `mailbox`. */
export async function loggedInWire(s: TestServer, mailbox: { address: string; token: string }): Promise<SmtpWire> {
  const wire = await SmtpWire.connect(submissionPort(s));
  await wire.login(mailbox.address, mailbox.token);
  return wire;
}

/** One message over the wire to port 25, as a remote MTA sends it; the final reply line. */
export async function sendToMx(port: number, to: string, raw: string, from = 'news@sender.example'): Promise<string> {
  const wire = await SmtpWire.connect(port);
  await wire.cmd('EHLO peer.sender.example', 250);
  await wire.cmd(`MAIL FROM:<${from}>`, 250);
  await wire.cmd(`RCPT TO:<${to}>`, 250);
  await wire.cmd('DATA', 354);
  const reply = await wire.cmd(`${raw}\r\n.`);
  await wire.cmd('QUIT', 221);
  return reply.last;
}

/** The self-signed certificate the server generated, so clients can verify it for real. */
export const serverCert = (s: TestServer): string => readFileSync(path.join(s.dataDir, 'smtp-tls', 'cert.pem'), 'utf8');

/**
 * nodemailer as a submitting client: STARTTLS required, certificate verified against the generated
 * one. `sendMail` resolves once a queued message is written (deliveredAfter; queued submission).
 */
export function submitter(s: TestServer, user: string, pass: string) {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: submissionPort(s),
    secure: false,
    requireTLS: true,
    tls: { ca: [serverCert(s)], servername: SMTP_HOST, minVersion: 'TLSv1.2' },
    auth: { user, pass },
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 10_000,
  });
  const send = transport.sendMail.bind(transport);
  return Object.assign(transport, {
    sendMail: async (mail: Parameters<typeof send>[0]) => {
      const info = await send(mail);
      await deliveredAfter(submissionPort(s), info.response);
      return info;
    },
  });
}

/** An active alias of a mailbox together with its sender identity (what a Mailbox manifest declares). */
export async function addAlias(
  s: TestServer,
  mailboxId: string,
  address: string,
  o: { identity?: boolean; active?: boolean } = {},
): Promise<void> {
  await s.runtime.services.db.tx(async (trx) => {
    await sql`insert into mailbox_alias (id, mailbox_id, address, is_active, created_at)
      values (${newId(ID_PREFIX.alias)}, ${mailboxId}, ${address}, ${o.active ?? true}, now())`.execute(trx);
    if (o.identity !== false) await addIdentityIn(trx, mailboxId, address, o.active ?? true);
  });
}

/** A sender identity that is neither the primary address nor an alias. */
export async function addIdentity(s: TestServer, mailboxId: string, address: string, active = true): Promise<void> {
  await s.runtime.services.db.tx((trx) => addIdentityIn(trx, mailboxId, address, active));
}

async function addIdentityIn(trx: any, mailboxId: string, address: string, active: boolean): Promise<void> {
  await sql`insert into sender_identity (id, mailbox_id, address, display_name, is_active, created_at)
    values (${newId(ID_PREFIX.identity)}, ${mailboxId}, ${address}, '', ${active}, now())`.execute(trx);
}
