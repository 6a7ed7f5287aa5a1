import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import nodemailer from 'nodemailer';
import { startTestServer, type TestServer } from '../support/harness.js';
import { rowsOf, sendBody, waitFor } from '../delivery/helpers.js';
import { startSink } from '../transport/smtp-sink.js';
import { bodyOf, message, storedMail, viaSender as viaMta } from './peer-mail.js';
import { postfixUnavailable, startPostfix, type PrivatePostfix } from './postfix.js';

// Interop with a real MTA (docs/wire.md): a private Postfix 3 sends the world's mail to port 25,
// and another is the relay the service delivers to, in front of a sink that records what arrives.
// A third relay hides 8BITMIME and SMTPUTF8, as an older MTA would.

const skip = postfixUnavailable();
if (skip) console.log(`interop tests skipped: ${skip}`);

type Sink = Awaited<ReturnType<typeof startSink>>;
let sink: Sink;
let relay: PrivatePostfix;
let oldRelay: PrivatePostfix;
let sender: PrivatePostfix;
let server: TestServer;
let oldServer: TestServer;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
let jorg: { mailboxId: string; address: string; token: string };
let oldAlice: { mailboxId: string; address: string; token: string };
const { q, inboundWith, rawOf } = storedMail(() => server);
const viaSender = (envelope: { from: string; to: string[] }, raw: Buffer | string) =>
  viaMta(sender.port, envelope, raw);

const FAST = { WORKER_POLL_INTERVAL: '100ms', INBOUND_QUEUE_POLL_INTERVAL: '50ms', DELIVERY_RETRY_BASE: '200ms' };
const serve = (relayPort: number) =>
  startTestServer({
    roles: ['api', 'smtp', 'worker'],
    env: {
      SMTP_SUBMISSION_PORT: '0',
      SMTP_MX_PORT: '0',
      SMTP_HOSTNAME: 'mail.test',
      SEND_RATE_LIMIT_PER_MINUTE: '100000',
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relayPort}?tls=insecure`,
      ...FAST,
    },
  });

beforeAll(async () => {
  if (skip) return;
  sink = await startSink();
  relay = await startPostfix('relay', `[127.0.0.1]:${sink.port}`, {
    smtpd_recipient_restrictions:
      'check_recipient_access inline:{ refused@remote.example=REJECT }, permit_mynetworks, reject',
  });
  oldRelay = await startPostfix('oldrelay', `[127.0.0.1]:${sink.port}`, {
    smtpd_discard_ehlo_keywords: '8bitmime, smtputf8',
  });
  server = await serve(relay.port);
  oldServer = await serve(oldRelay.port);
  sender = await startPostfix('sender', `[127.0.0.1]:${server.runtime.smtpPorts.mx}`);
  x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  jorg = await server.createMailbox(x.token, `jörg@${x.name}`, 'Jörg');
  const ox = await oldServer.createDomain();
  oldAlice = await oldServer.createMailbox(ox.token, `alice@${ox.name}`, 'Alice');
}, 120_000);
afterAll(async () => {
  for (const p of [sender, relay, oldRelay]) await p?.stop();
  await server?.close();
  await oldServer?.close();
  await sink?.close();
});

describe.skipIf(skip)('Postfix sending to port 25', () => {
  it('delivers 8-bit mail over STARTTLS with PIPELINING, stored byte for byte', async () => {
    const raw = message({
      from: 'Bob <bob@sender.example>',
      to: alice.address,
      subject: 'from postfix',
      body: 'Grüße\r\n.dot line\r\n',
    });
    await viaSender({ from: 'bob@sender.example', to: [alice.address] }, raw);
    const id = await inboundWith(alice.mailboxId, 'from postfix');
    const stored = await rawOf(alice.token, id);
    expect(bodyOf(stored).equals(bodyOf(raw))).toBe(true);
    expect(stored.toString('utf8')).toMatch(/Received: from sender\.postfix\.test[\s\S]*with ESMTPS/);
    expect(sender.log().join('\n')).toMatch(/status=sent/);
  });

  it('delivers from and to internationalized addresses with SMTPUTF8', async () => {
    const raw = message({
      from: 'Jörg <jörg@bücher.example>',
      to: jorg.address,
      subject: 'utf8 via postfix',
      body: 'Hallo\r\n',
    });
    await viaSender({ from: 'jörg@bücher.example', to: [jorg.address] }, raw);
    const id = await inboundWith(jorg.mailboxId, 'utf8 via postfix');
    const detail = (await server.api(jorg.token).get(`/api/messages/${id}`)).body.data;
    expect(detail).toMatchObject({ fromAddress: 'jörg@bücher.example', fromDisplayName: 'Jörg' });
  });

  it('delivers a 3 MB message with attachments intact', async () => {
    const blob = Buffer.alloc(3 * 1024 * 1024, 7)
      .toString('base64')
      .replace(/.{76}/g, '$&\r\n');
    const raw = message({
      from: 'bob@sender.example',
      to: alice.address,
      subject: 'large via postfix',
      headers: ['Content-Type: multipart/mixed; boundary="b"'],
      body: [
        '--b',
        'Content-Type: text/plain',
        '',
        'see attached',
        '--b',
        'Content-Type: application/octet-stream; name="big.bin"',
        'Content-Transfer-Encoding: base64',
        '',
        blob,
        '--b--',
        '',
      ].join('\r\n'),
    });
    await viaSender({ from: 'bob@sender.example', to: [alice.address] }, raw);
    const id = await inboundWith(alice.mailboxId, 'large via postfix');
    expect(bodyOf(await rawOf(alice.token, id)).equals(bodyOf(raw))).toBe(true);
    const detail = (await server.api(alice.token).get(`/api/messages/${id}`)).body.data;
    expect(detail.attachments).toEqual([expect.objectContaining({ filename: 'big.bin', sizeBytes: 3 * 1024 * 1024 })]);
  });
});

describe.skipIf(skip)('Postfix as the relay', () => {
  const arrived = (subject: string) =>
    waitFor(
      async () => sink.accepted.find((m) => m.raw.toString('utf8').includes(`Subject: ${subject}`)),
      30_000,
      `${subject} at the sink`,
    );

  it('relays a 587 submission with its body unchanged, 8BITMIME declared', async () => {
    const raw = message({
      from: `Alice <${alice.address}>`,
      to: 'carol@remote.example',
      subject: 'via relay',
      body: 'één\r\ntwee\r\n',
    });
    const t = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.runtime.smtpPorts.submission!,
      secure: false,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
      auth: { user: alice.address, pass: alice.token },
    });
    await t.sendMail({ envelope: { from: alice.address, to: ['carol@remote.example'] }, raw });
    t.close();
    const got = await arrived('via relay');
    expect(bodyOf(got.raw).equals(bodyOf(raw))).toBe(true);
    expect(got.mailArgs.BODY).toBe('8BITMIME');
    expect(relay.log().join('\n')).toMatch(/from=<[^>]+>, size=\d+/);
  });

  it('records a recipient the relay refuses as failed, with the relay reply', async () => {
    const res = await server
      .api(alice.token)
      .post('/api/messages/send', sendBody(['refused@remote.example'], { subject: 'refused one' }));
    const id = res.body.data.messageId as string;
    const row = await waitFor(
      async () =>
        (await q`select status, remote_reply from message_recipient where message_id = ${id} and status = 'failed'`)[0],
      30_000,
      'refused recipient failed',
    );
    expect(row.remote_reply).toMatch(/^554 5\.7\.1 .*refused@remote\.example/);
  });
});

describe.skipIf(skip)('a relay without 8BITMIME or SMTPUTF8', () => {
  it('gets the 8-bit message as quoted-printable', async () => {
    const res = await oldServer
      .api(oldAlice.token)
      .post('/api/messages/send', sendBody(['carol@remote.example'], { subject: 'old relay', bodyText: 'Grüße' }));
    expect(res.status).toBe(202);
    const got = await waitFor(
      async () => sink.accepted.find((m) => m.raw.toString('latin1').includes('Subject: old relay')),
      30_000,
      'old relay copy',
    );
    expect(got.raw.some((b) => b > 0x7f)).toBe(false);
  });

  it('bounces mail to a UTF-8 address with 5.6.7 instead of sending it', async () => {
    const res = await oldServer
      .api(oldAlice.token)
      .post('/api/messages/send', sendBody(['jörg@bücher.example'], { subject: 'old relay utf8' }));
    const id = res.body.data.messageId as string;
    const row = await waitFor(
      async () =>
        (
          await rowsOf(
            () => oldServer,
          )`select status, remote_reply from message_recipient where message_id = ${id} and status = 'failed'`
        )[0],
      30_000,
      'utf8 recipient failed',
    );
    expect(row.remote_reply).toMatch(/^553 5\.6\.7 /);
  });
});
