import { rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import nodemailer from 'nodemailer';
import { authenticate } from 'mailauth';
import { startTestServer, type TestServer } from '../support/harness.js';
import { sendBody, waitFor } from '../delivery/helpers.js';
import { startSink } from '../transport/smtp-sink.js';
import { bodyOf, message, storedMail, viaSender as viaMta } from './peer-mail.js';
import { selfSignedCertificate } from '../../src/channels/smtp/self-signed-cert.js';
import { eximUnavailable, startExim, type PrivateExim } from './exim.js';

// Interop with a real Exim 4 (docs/wire.md), as postfix.test.ts does with Postfix: a private Exim
// sends the world's mail to port 25 (and routes its bounces to a sink that records them), and
// another is the smarthost the service relays through (STARTTLS, AUTH PLAIN), in front of the sink.

const skip = eximUnavailable();
if (skip) console.log(`Exim interop tests skipped: ${skip}`);

type Sink = Awaited<ReturnType<typeof startSink>>;
type Box = { mailboxId: string; address: string; token: string };
let sink: Sink;
let relay: PrivateExim;
let sender: PrivateExim;
let server: TestServer;
let x: { domainId: string; name: string; token: string };
let alice: Box;
let jorg: Box;
let carol: Box;
let full: Box;
const { q, inboundWith, rawOf } = storedMail(() => server);
const viaSender = (envelope: { from: string; to: string[] }, raw: Buffer | string) =>
  viaMta(sender.port, envelope, raw);

/** Port 25's SIZE; the large messages are sized around it. */
const MAX_BYTES = 4 * 1024 * 1024;
const RELAY_AUTH = { user: 'relay-user', pass: 'relay-pass' };

beforeAll(async () => {
  if (skip) return;
  sink = await startSink();
  relay = await startExim('relay', [{ domains: '*', port: sink.port }], {
    tls: await selfSignedCertificate('relay.exim.test'),
    auth: RELAY_AUTH,
    rcptAcl: [
      '  deny recipients = refused@remote.example',
      '    message = 5.7.1 <$local_part@$domain>: refused by policy',
      '  defer recipients = later@remote.example',
      // While the test keeps a file defer-later in the instance's folder (the spool's parent).
      '    condition = ${if exists{$spool_directory/../defer-later}}',
      '    message = 4.2.0 <$local_part@$domain>: try again later',
    ].join('\n'),
  });
  server = await startTestServer({
    roles: ['api', 'smtp', 'worker'],
    env: {
      SMTP_SUBMISSION_PORT: '0',
      SMTP_MX_PORT: '0',
      SMTP_HOSTNAME: 'mail.test',
      SMTP_MAX_MESSAGE_BYTES: String(MAX_BYTES),
      // A third recipient in one transaction is 452 4.5.3; a fourth connection from 127.0.0.1 is
      // 421 4.7.0 (a test holds three): the transient refusals Exim must come back after.
      MAX_RECIPIENTS: '2',
      SMTP_MAX_CONNECTIONS_PER_CLIENT: '3',
      SEND_RATE_LIMIT_PER_MINUTE: '100000',
      SMTP_RELAY_URL: `smtp://${RELAY_AUTH.user}:${RELAY_AUTH.pass}@127.0.0.1:${relay.port}?tls=insecure`,
      WORKER_POLL_INTERVAL: '100ms',
      INBOUND_QUEUE_POLL_INTERVAL: '50ms',
      DELIVERY_RETRY_BASE: '200ms',
    },
  });
  // The remote senders' domains (where bounces go) lead to the sink, everything else to port 25.
  sender = await startExim('sender', [
    { domains: 'sender.example : bücher.example', port: sink.port },
    { domains: '*', port: server.runtime.smtpPorts.mx! },
  ]);
  x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  jorg = await server.createMailbox(x.token, `jörg@${x.name}`, 'Jörg');
  carol = await server.createMailbox(x.token, `carol@${x.name}`, 'Carol');
  full = await server.createMailbox(x.token, `full@${x.name}`, 'Full');
  const quota = await server
    .api(x.token)
    .put(`/api/domain/mailboxes/${full.mailboxId}/storage`, { storageQuotaBytes: 0 });
  expect(quota.status).toBe(200);
}, 120_000);
afterAll(async () => {
  for (const p of [sender, relay]) await p?.stop();
  await server?.close();
  await sink?.close();
});

const copies = async (mailboxId: string, subject: string) =>
  Number(
    (
      await q`select count(*) as n from message where mailbox_id = ${mailboxId} and direction = 'inbound' and subject = ${subject}`
    )[0].n,
  );

/** A message with one base64 attachment of `bytes` bytes. */
const withAttachment = (to: string, subject: string, bytes: number) =>
  message({
    from: 'bob@sender.example',
    to,
    subject,
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
      Buffer.alloc(bytes, 7).toString('base64').replace(/.{76}/g, '$&\r\n'),
      '--b--',
      '',
    ].join('\r\n'),
  });

/** Exim's id of the message whose subject is `subject`, from its arrival line (log_selector +subject). */
const eximIdOf = (exim: PrivateExim, subject: string): string | undefined =>
  exim
    .log()
    .find((l) => l.includes(' <= ') && l.includes(`T="${subject}"`))
    ?.split(' ')[2];
/** The Exim log lines of that message: its arrival, each delivery, deferral and bounce. */
const eximLines = (exim: PrivateExim, subject: string): string[] => {
  const id = eximIdOf(exim, subject);
  return id ? exim.log().filter((l) => l.split(' ')[2] === id) : [];
};

/** Opens connections to port 25 until it refuses one (421): every slot 127.0.0.1 has is held. */
async function takeEverySlot(): Promise<Socket[]> {
  const held: Socket[] = [];
  for (let i = 0; i < 10; i++) {
    const socket = connect(server.runtime.smtpPorts.mx!, '127.0.0.1');
    const greeting = await new Promise<string>((resolve, reject) => {
      let text = '';
      socket.on('data', (c: Buffer) => {
        text += c.toString();
        if (text.includes('\r\n')) resolve(text);
      });
      socket.once('error', reject);
    });
    if (greeting.startsWith('220 ')) {
      held.push(socket);
      continue;
    }
    socket.destroy();
    expect(greeting).toMatch(/^421 4\.7\.0 /);
    return held;
  }
  throw new Error('port 25 took ten connections from one address');
}

/** The bounce (null sender) the sending Exim made for `address`, as the sink recorded it. */
const bounceFor = (address: string) =>
  waitFor(
    async () =>
      sink.accepted.find(
        (m) => m.from === '' && m.raw.toString('utf8').includes(`X-Failed-Recipients: ${address}\r\n`),
      ),
    30_000,
    `bounce for ${address}`,
  );

describe.skipIf(skip)('Exim sending to port 25', () => {
  it('delivers 8-bit mail over STARTTLS, stored as sent below the trace fields', async () => {
    const raw = message({
      from: 'Bob <bob@sender.example>',
      to: alice.address,
      subject: 'from exim',
      body: 'Grüße\r\n.dot line\r\n',
    });
    await viaSender({ from: 'bob@sender.example', to: [alice.address] }, raw);
    const id = await inboundWith(alice.mailboxId, 'from exim');
    const stored = await rawOf(alice.token, id);
    // Our Authentication-Results and Received, Exim's Received, then the message byte for byte.
    expect(stored.subarray(stored.length - raw.length).equals(raw)).toBe(true);
    const trace = stored.subarray(0, stored.length - raw.length).toString('utf8');
    expect(trace).toMatch(
      /^Authentication-Results: mail\.test;[^]*\r\nReceived: from sender\.exim\.test \(\[127\.0\.0\.1\]\)\r\n\tby mail\.test with ESMTPS [^]*\r\nReceived: from [^]*\r\n\tby sender\.exim\.test with esmtp \(Exim 4\.\d+\)[^]*\r\n$/,
    );
    expect(trace.match(/^Received: /gm)).toHaveLength(2);
    // Exim logs the delivery after our 250, which may be after the worker stored it.
    await sender.drained();
    const delivered = eximLines(sender, 'from exim').find((l) => l.includes(' => '));
    expect(delivered).toMatch(new RegExp(`=> ${alice.address} .* X=TLS1\\.[23]:.* C="250 2\\.0\\.0 `));
  });

  it('delivers from and to internationalized addresses with SMTPUTF8', async () => {
    const raw = message({
      from: 'Jörg <jörg@bücher.example>',
      to: jorg.address,
      subject: 'utf8 via exim',
      body: 'Hallo\r\n',
    });
    await viaSender({ from: 'jörg@bücher.example', to: [jorg.address] }, raw);
    const id = await inboundWith(jorg.mailboxId, 'utf8 via exim');
    const detail = (await server.api(jorg.token).get(`/api/messages/${id}`)).body.data;
    expect(detail).toMatchObject({ fromAddress: 'jörg@bücher.example', fromDisplayName: 'Jörg' });
    // Exim took it with SMTPUTF8 (P=utf8esmtp) and passed it on with SMTPUTF8: port 25 refuses a
    // UTF-8 address without it (553 5.6.7).
    await sender.drained();
    const lines = eximLines(sender, 'utf8 via exim');
    expect(lines.find((l) => l.includes(' <= '))).toMatch(/<= jörg@bücher\.example .* P=utf8esmtp /);
    expect(lines.find((l) => l.includes(' => '))).toContain(`=> ${jorg.address} `);
  });

  it('delivers a message just under SIZE intact; one over it is refused at MAIL FROM and bounced', async () => {
    const under = withAttachment(alice.address, 'just under size', 3_000_000);
    expect(under.length).toBeGreaterThan(MAX_BYTES - 100 * 1024);
    await viaSender({ from: 'bob@sender.example', to: [alice.address] }, under);
    const id = await inboundWith(alice.mailboxId, 'just under size');
    expect(bodyOf(await rawOf(alice.token, id)).equals(bodyOf(under))).toBe(true);
    const detail = (await server.api(alice.token).get(`/api/messages/${id}`)).body.data;
    expect(detail.attachments).toEqual([expect.objectContaining({ filename: 'big.bin', sizeBytes: 3_000_000 })]);

    const over = withAttachment(carol.address, 'over size', 3_200_000);
    expect(over.length).toBeGreaterThan(MAX_BYTES);
    await viaSender({ from: 'bob@sender.example', to: [carol.address] }, over);
    const bounce = (await bounceFor(carol.address)).raw.toString('utf8');
    expect(bounce).toMatch(/^Diagnostic-Code: smtp; 552 5\.3\.4 /m);
    // Exim declared SIZE= and took our 552 there, before sending any of the 4 MB.
    expect(eximLines(sender, 'over size').find((l) => l.includes(' ** '))).toMatch(
      new RegExp(
        `\\*\\* ${carol.address} .*after (pipelined )?MAIL FROM:<bob@sender\\.example> SIZE=\\d+: 552 5\\.3\\.4 `,
      ),
    );
    expect(await copies(carol.mailboxId, 'over size')).toBe(0);
  });

  it('a 421 while port 25 is busy: Exim queues the message and delivers it on a retry', async () => {
    const held = await takeEverySlot();
    try {
      const raw = message({ from: 'bob@sender.example', to: alice.address, subject: 'while busy', body: 'hi\r\n' });
      await viaSender({ from: 'bob@sender.example', to: [alice.address] }, raw);
      await waitFor(
        async () => eximLines(sender, 'while busy').some((l) => / == \S+ .*: 421 4\.7\.0 Too many connections/.test(l)),
        30_000,
        'Exim deferred it',
      );
      expect(await sender.queue()).toContain(eximIdOf(sender, 'while busy'));
      expect(await copies(alice.mailboxId, 'while busy')).toBe(0);
    } finally {
      for (const s of held) s.destroy();
    }
    await inboundWith(alice.mailboxId, 'while busy');
    await sender.drained();
    const lines = eximLines(sender, 'while busy');
    const deferredAt = lines.findIndex((l) => l.includes(' == '));
    expect(lines.findIndex((l) => l.includes(` => ${alice.address} `))).toBeGreaterThan(deferredAt);
    expect(lines.some((l) => l.includes(' ** '))).toBe(false);
  });

  it('a 452 for the recipient over our cap: Exim sends it again in a transaction of its own', async () => {
    const to = [alice.address, jorg.address, carol.address];
    const raw = message({ from: 'bob@sender.example', to: to.join(', '), subject: 'three at once', body: 'hi\r\n' });
    await viaSender({ from: 'bob@sender.example', to }, raw);
    for (const box of [alice, jorg, carol]) await inboundWith(box.mailboxId, 'three at once');
    await sender.drained();
    // Two recipients in our first transaction, the third (452 4.5.3 at its RCPT) in a second one.
    const queuedAs = eximLines(sender, 'three at once')
      .filter((l) => / [=-]> /.test(l))
      .map((l) => /C="250 2\.0\.0 Queued as (\S+)"/.exec(l)?.[1]);
    expect(queuedAs).toHaveLength(3);
    expect(new Set(queuedAs).size).toBe(2);
    for (const box of [alice, jorg, carol]) expect(await copies(box.mailboxId, 'three at once')).toBe(1);
  });

  it('a 552 5.2.2 for a full mailbox: Exim bounces that recipient at once, the other gets the message', async () => {
    const to = [alice.address, full.address];
    const raw = message({ from: 'bob@sender.example', to: to.join(', '), subject: 'one full', body: 'hi\r\n' });
    await viaSender({ from: 'bob@sender.example', to }, raw);
    await inboundWith(alice.mailboxId, 'one full');
    const bounce = (await bounceFor(full.address)).raw.toString('utf8');
    expect(bounce).toMatch(/^Diagnostic-Code: smtp; 552 5\.2\.2 Mailbox full/m);
    const lines = eximLines(sender, 'one full');
    expect(lines.find((l) => l.includes(' ** '))).toMatch(
      new RegExp(`\\*\\* ${full.address} .*after RCPT TO:<${full.address}>: 552 5\\.2\\.2 Mailbox full`),
    );
    expect(lines.some((l) => l.includes(' == '))).toBe(false);
    expect(await copies(full.mailboxId, 'one full')).toBe(0);
  });
});

describe.skipIf(skip)('Exim as the relay (STARTTLS, AUTH PLAIN)', () => {
  const arrived = (subject: string) =>
    waitFor(
      async () => sink.accepted.find((m) => m.raw.toString('utf8').includes(`Subject: ${subject}`)),
      30_000,
      `${subject} at the sink`,
    );

  /** The DKIM verdict on what the sink got, with x's published record as the only DNS. */
  async function dkimResult(raw: Buffer, sender: string): Promise<string | undefined> {
    const record = (await server.api(x.token).get('/api/domain/dkim')).body.data;
    const verdict = await authenticate(raw, {
      ip: '127.0.0.1',
      helo: 'relay.exim.test',
      sender,
      resolver: async (name: string, type: string) => {
        if (type === 'TXT' && name === record.name) return [[record.value]];
        throw Object.assign(new Error(`no ${type} for ${name}`), { code: 'ENOTFOUND' });
      },
      disableArc: true,
      disableBimi: true,
      disableDmarc: true,
    });
    return verdict.dkim.results[0]?.status.result;
  }

  it('relays a 587 submission with its body unchanged, BODY=8BITMIME declared, DKIM valid at the next hop', async () => {
    const raw = message({
      from: `Alice <${alice.address}>`,
      to: 'carol@remote.example',
      subject: 'via exim relay',
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
    const got = await arrived('via exim relay');
    expect(bodyOf(got.raw).equals(bodyOf(raw))).toBe(true);
    expect(got.raw.toString('utf8')).toMatch(/^Received: from [^]*\r\n\tby relay\.exim\.test with esmtpsa /);
    expect(await dkimResult(got.raw, alice.address)).toBe('pass');
    // The service reached Exim over STARTTLS, authenticated there (Exim offers AUTH after TLS
    // only) and declared BODY=8BITMIME (M8S=8). Exim does not declare it again to its next hop
    // (it is "not a protocol converter"): the body arrives unchanged all the same.
    expect(eximLines(relay, 'via exim relay').find((l) => l.includes(' <= '))).toMatch(
      new RegExp(
        `<= ${alice.address} H=\\(mail\\.test\\) \\[127\\.0\\.0\\.1\\] P=esmtpsa X=TLS1\\.[23]:\\S+ .*A=plain:relay-user S=\\d+ M8S=8 `,
      ),
    );
  });

  it('relays an API send to an internationalized address with SMTPUTF8, DKIM valid', async () => {
    const res = await server
      .api(alice.token)
      .post(
        '/api/messages/send',
        sendBody(['jörg@bücher.example'], { subject: 'utf8 via exim relay', bodyText: 'Grüße' }),
      );
    expect(res.status).toBe(202);
    const got = await arrived('utf8 via exim relay');
    expect(got.to).toEqual(['jörg@bücher.example']);
    expect(got.mailArgs.SMTPUTF8).toBe(true);
    expect(await dkimResult(got.raw, alice.address)).toBe('pass');
    expect(eximLines(relay, 'utf8 via exim relay').find((l) => l.includes(' <= '))).toMatch(/ P=utf8esmtpsa /);
    const row = await waitFor(
      async () =>
        (
          await q`select status, remote_reply from message_recipient where message_id = ${res.body.data.messageId} and status = 'delivered'`
        )[0],
      30_000,
      'utf8 recipient delivered',
    );
    expect(row.remote_reply).toMatch(/^250 OK id=\S+/);
  });

  it('records a recipient the relay refuses as failed, with the relay reply', async () => {
    const res = await server
      .api(alice.token)
      .post('/api/messages/send', sendBody(['refused@remote.example'], { subject: 'refused by exim' }));
    const id = res.body.data.messageId as string;
    const row = await waitFor(
      async () =>
        (await q`select status, remote_reply from message_recipient where message_id = ${id} and status = 'failed'`)[0],
      30_000,
      'refused recipient failed',
    );
    expect(row.remote_reply).toMatch(/^550 5\.7\.1 <refused@remote\.example>: refused by policy/);
  });

  it('retries a recipient the relay defers, and delivers it once the relay takes it', async () => {
    const flag = path.join(relay.dir, 'defer-later');
    writeFileSync(flag, '');
    const res = await server
      .api(alice.token)
      .post('/api/messages/send', sendBody(['later@remote.example'], { subject: 'deferred by exim' }));
    const id = res.body.data.messageId as string;
    const deferred = await waitFor(
      async () =>
        (
          await q`select remote_reply from message_recipient where message_id = ${id} and status = 'deferred' and remote_reply is not null`
        )[0],
      30_000,
      'recipient deferred',
    );
    expect(deferred.remote_reply).toMatch(/^451 4\.2\.0 <later@remote\.example>: try again later/);
    rmSync(flag);
    const row = await waitFor(
      async () =>
        (await q`select attempts from message_recipient where message_id = ${id} and status = 'delivered'`)[0],
      30_000,
      'recipient delivered',
    );
    expect(row.attempts).toBeGreaterThan(1);
    await arrived('deferred by exim');
    expect(sink.copiesFor('later@remote.example')).toBe(1);
  });
});
