import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf } from '../delivery/helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { mxPort, startSmtpTestServer, submissionPort } from './world.js';
import { deliverToMx, mxRefusal } from './mx-peer.js';
import { SmtpWire } from './smtp-wire.js';

// Regressions found by the reliability suite (test/reliability/mime-bombs.test.ts,
// smtp-abuse.test.ts, attachment-names.test.ts): a NUL in received mail is dropped from the parsed
// fields instead of failing the insert (which answered 451 and made the sender retry forever); the
// MIME headers of all parts together are capped, so a message cannot make the parser decode
// megabytes of encoded words; bidi marks and line separators leave attachment names; command lines
// over 512 octets get 500 5.5.2; a full listener answers 421 4.7.0 like a full client slot; a
// session ends at SMTP_SESSION_TIMEOUT however busy it is.

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let alice: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);

beforeAll(async () => {
  dns = await startDnsStub({});
  server = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server } });
  const x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('hostile MIME through the MX port', () => {
  it('stores a message with NULs in its subject, sender name, Message-ID and body, without the NULs', async () => {
    const raw =
      `From: "Ev\u0000e" <eve@sender.example>\r\nTo: ${alice.address}\r\nSubject: nul\u0000 subject\r\nMessage-ID: <nul\u0000id@sender.example>\r\n` +
      `MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nbody with a \u0000 NUL\r\n`;
    const { response } = await deliverToMx(mxPort(server), { from: 'eve@sender.example', to: alice.address }, raw);
    expect(response).toMatch(/^250 /);
    const [row] =
      await q`select subject, from_display_name, internet_message_id, body_text from message where mailbox_id = ${alice.mailboxId} and subject like 'nul%'`;
    expect(row).toMatchObject({
      subject: 'nul subject',
      from_display_name: 'Eve',
      internet_message_id: '<nulid@sender.example>',
    });
    expect(row.body_text).toContain('body with a  NUL');
  });

  it('stores a subject cut at 998 characters through an emoji (the cut half becomes U+FFFD)', async () => {
    const subject = `${'s'.repeat(997)}🎉 tail`;
    const raw = `From: eve@sender.example\r\nTo: ${alice.address}\r\nSubject: =?utf-8?B?${Buffer.from(subject).toString('base64')}?=\r\n\r\nbody\r\n`;
    const { response } = await deliverToMx(mxPort(server), { from: 'eve@sender.example', to: alice.address }, raw);
    expect(response).toMatch(/^250 /);
    const [row] = await q`select subject from message where mailbox_id = ${alice.mailboxId} and subject like 'sss%'`;
    expect(row.subject).toBe(`${'s'.repeat(997)}\ufffd`);
  });

  it('refuses MIME headers over 512 KiB across all parts (554 5.6.0) before decoding them', async () => {
    const filename = Array.from({ length: 1_500 }, () => '=?utf-8?B?w6k=?=').join('\r\n ');
    const parts = Array.from(
      { length: 25 },
      () =>
        `--e\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="${filename}"\r\n\r\nx\r\n`,
    ).join('');
    const raw = `From: eve@sender.example\r\nTo: ${alice.address}\r\nSubject: headers\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="e"\r\n\r\n${parts}--e--\r\n`;
    expect(raw.length).toBeGreaterThan(512 * 1024);
    expect(await mxRefusal(mxPort(server), { from: 'eve@sender.example', to: alice.address }, raw)).toMatch(
      /^554 5\.6\.0 /,
    );
  });
});

describe('hostile names and lines', () => {
  it('drops U+061C and the line and paragraph separators from attachment names, in the JSON and the download header', async () => {
    const name = 'a\u061Cb\u2028c\u2029d\u202E.txt';
    const raw =
      `From: eve@sender.example\r\nTo: ${alice.address}\r\nSubject: bidi name\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="n"\r\n\r\n` +
      `--n\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename="=?utf-8?B?${Buffer.from(name).toString('base64')}?="\r\n\r\nx\r\n--n--\r\n`;
    await deliverToMx(mxPort(server), { from: 'eve@sender.example', to: alice.address }, raw);
    const [row] = await q`select id from message where mailbox_id = ${alice.mailboxId} and subject = 'bidi name'`;
    const detail = await server.api(alice.token).get(`/api/messages/${row.id}`);
    const attachment = detail.body.data.attachments[0];
    expect(attachment.filename).toBe('abcd.txt');
    const res = await fetch(`${server.url}/api/messages/${row.id}/attachments/${attachment.attachmentId}`, {
      headers: { authorization: `Bearer ${alice.token}` },
    });
    await res.arrayBuffer();
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="abcd.txt"; filename*=UTF-8\'\'abcd.txt');
  });

  it('answers a command line over 512 octets with 500 5.5.2 and keeps the session; AUTH may be longer (RFC 4954)', async () => {
    const wire = await SmtpWire.connect(mxPort(server));
    await wire.ehlo('peer.sender.example');
    await wire.cmd(`NOOP ${'x'.repeat(505)}`, '250'); // 510 octets + CRLF = 512: still a command
    await wire.cmd(`NOOP ${'x'.repeat(506)}`, '500 5.5.2 Line too long');
    await wire.cmd(`MAIL FROM:<eve@sender.example> ${'X'.repeat(600)}`, '500 5.5.2 Line too long');
    await wire.cmd('MAIL FROM:<eve@sender.example>', '250');
    wire.close();
    const sub = await SmtpWire.connect(submissionPort(server));
    await sub.ehlo();
    await sub.starttls();
    await sub.ehlo();
    await sub.cmd(
      `AUTH PLAIN ${Buffer.from(`\0${alice.address}\0${'t'.repeat(900)}`).toString('base64')}`,
      '535 5.7.8',
    );
    sub.close();
  });

  it('answers a full listener (SMTP_MAX_CONNECTIONS) like a full client slot: 421 4.7.0', async () => {
    const small = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server, SMTP_MAX_CONNECTIONS: '2' } });
    try {
      const held = [await SmtpWire.connect(mxPort(small)), await SmtpWire.connect(mxPort(small))];
      const third = await SmtpWire.connect(mxPort(small), '421 4.7.0 Too many connections, try again later');
      expect(await third.closed()).toBe(true);
      for (const w of held) w.close();
    } finally {
      await small.close();
    }
  });

  it('ends a session at SMTP_SESSION_TIMEOUT even while the client keeps sending (421 4.4.2)', async () => {
    const short = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server, SMTP_SESSION_TIMEOUT: '2s' } });
    try {
      const wire = await SmtpWire.connect(mxPort(short));
      const t0 = Date.now();
      const dribble = setInterval(() => wire.write('NOOP\r\n'), 300);
      try {
        expect(await wire.closed(6_000)).toBe(true);
      } finally {
        clearInterval(dribble);
      }
      expect(Date.now() - t0).toBeLessThan(4_000);
      const text = (wire as unknown as { buffer: string }).buffer;
      expect(text).toContain('421 4.4.2 mail.test Session time limit exceeded, closing connection');
    } finally {
      await short.close();
    }
  });
});
