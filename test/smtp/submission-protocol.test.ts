import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf } from '../delivery/helpers.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { loggedInWire, startSmtpTestServer, submissionPort } from './world.js';

let server: TestServer;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);
const outboundCount = async () =>
  (await q`select count(*)::int as n from message where mailbox_id = ${alice.mailboxId}`)[0].n as number;

beforeAll(async () => {
  server = await startSmtpTestServer({
    env: { SMTP_MAX_MESSAGE_BYTES: '20000', MAX_RECIPIENTS: '3', SEND_RATE_LIMIT_PER_MINUTE: '1000' },
  });
  x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  bob = await server.createMailbox(x.token, `bob@${x.name}`, 'Bob');
});
afterAll(async () => {
  await server?.close();
});

const loggedIn = (): Promise<SmtpWire> => loggedInWire(server, alice);

/** MAIL, RCPT, DATA, then the given raw bytes (which must end DATA themselves). */
async function dataWith(wire: SmtpWire, raw: string | Buffer): Promise<void> {
  await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
  await wire.cmd(`RCPT TO:<${bob.address}>`, 250);
  await wire.cmd('DATA', 354);
  wire.write(raw);
}

describe('submission before TLS', () => {
  it('neither offers nor accepts AUTH in plaintext, and offers it after STARTTLS with TLS 1.2+', async () => {
    const wire = await SmtpWire.connect(submissionPort(server));
    const before = await wire.ehlo();
    expect(before).toContain('STARTTLS');
    expect(before.some((l) => l.startsWith('AUTH'))).toBe(false);
    expect(before).toContain('SIZE 20000');
    expect(before).toContain('ENHANCEDSTATUSCODES');
    expect(before.some((l) => /XCLIENT|XFORWARD|^DSN$|REQUIRETLS/.test(l))).toBe(false);
    expect(before).toContain('SMTPUTF8');
    await wire.cmd(
      `AUTH PLAIN ${Buffer.from(`\0${alice.address}\0${alice.token}`).toString('base64')}`,
      '530 5.7.0 Must issue a STARTTLS command first',
    );
    await wire.cmd('AUTH LOGIN', '530 5.7.0');
    await wire.cmd(`MAIL FROM:<${alice.address}>`, '530 5.7.0 Authentication required');
    await wire.starttls();
    expect(['TLSv1.2', 'TLSv1.3']).toContain(wire.tlsProtocol);
    const after = await wire.ehlo();
    expect(after).toContain('AUTH PLAIN LOGIN');
    expect(after).not.toContain('STARTTLS');
    wire.close();
  });

  it('refuses a TLS 1.1 handshake', async () => {
    const tls = await import('node:tls');
    const wire = await SmtpWire.connect(submissionPort(server));
    await wire.ehlo();
    await wire.cmd('STARTTLS', 220);
    const socket = (wire as any).socket as import('node:net').Socket;
    socket.removeAllListeners('data');
    const old = tls.connect({ socket, rejectUnauthorized: false, minVersion: 'TLSv1', maxVersion: 'TLSv1.1' });
    const outcome = await new Promise<string>((resolve) => {
      old.once('secureConnect', () => resolve('connected'));
      old.once('error', (e) => resolve(e.message));
    });
    expect(outcome).not.toBe('connected');
    wire.close();
  });

  it('discards commands pipelined behind STARTTLS (STARTTLS command injection)', async () => {
    const wire = await SmtpWire.connect(submissionPort(server));
    await wire.ehlo();
    wire.write(`STARTTLS\r\nMAIL FROM:<${alice.address}>\r\nRSET\r\n`);
    await wire.expect(220);
    const tls = await import('node:tls');
    const socket = (wire as any).socket as import('node:net').Socket;
    socket.removeAllListeners('data');
    socket.removeAllListeners('close');
    const secure = tls.connect({ socket, rejectUnauthorized: false });
    await new Promise((r) => secure.once('secureConnect', r));
    const received: string[] = [];
    secure.on('data', (d) => received.push(d.toString()));
    secure.write('NOOP\r\n');
    await new Promise((r) => setTimeout(r, 300));
    // Exactly one reply: the NOOP's. The injected MAIL and RSET never ran inside the TLS session.
    expect(received.join('')).toMatch(/^250 2\.0\.0 OK\r\n$/);
    secure.destroy();
  });

  it('has no XCLIENT or XFORWARD, and no relay without AUTH', async () => {
    const wire = await SmtpWire.connect(submissionPort(server));
    await wire.ehlo();
    expect((await wire.cmd('XCLIENT ADDR=10.0.0.1 LOGIN=alice')).code).toBeGreaterThanOrEqual(500);
    expect((await wire.cmd('XFORWARD ADDR=10.0.0.1')).code).toBeGreaterThanOrEqual(500);
    await wire.starttls();
    await wire.ehlo();
    await wire.cmd(`MAIL FROM:<${alice.address}>`, '530 5.7.0');
    await wire.cmd('RCPT TO:<victim@remote.example>', '530 5.7.0');
    wire.close();
  });
});

describe('submission transaction rules', () => {
  it('requires an active identity of the mailbox as MAIL FROM and as From header', async () => {
    const wire = await loggedIn();
    await wire.cmd(
      `MAIL FROM:<${bob.address}>`,
      '550 5.7.1 Sender is not an active identity of the authenticated mailbox',
    );
    await wire.cmd('MAIL FROM:<>', '550 5.7.1');
    await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
    await wire.cmd(`RCPT TO:<${bob.address}>`, 250);
    await wire.cmd('DATA', 354);
    const before = await outboundCount();
    wire.write(`${rfc5322({ from: bob.address, to: bob.address })}.\r\n`);
    await wire.expect('550 5.7.1 Sender is not an active identity');
    await dataWith(wire, `${rfc5322({ from: `${alice.address}, ${bob.address}`, to: bob.address })}.\r\n`);
    await wire.expect('550 5.7.1');
    await dataWith(wire, `Subject: no from\r\n\r\nbody\r\n.\r\n`);
    await wire.expect('550 5.7.1');
    expect(await outboundCount()).toBe(before);
    wire.close();
  });

  it('limits recipients per transaction (452 4.5.3) and refuses address literals and quoted local parts', async () => {
    const wire = await loggedIn();
    await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
    expect((await wire.cmd('RCPT TO:<"a@b"@remote.example>')).last).toMatch(/^5\d\d 5\.1\.3 /);
    expect((await wire.cmd('RCPT TO:<user@[127.0.0.1]>')).last).toMatch(/^5\d\d 5\.1\.3 /);
    for (const n of [1, 2, 3]) await wire.cmd(`RCPT TO:<r${n}@remote.example>`, '250 2.1.5');
    await wire.cmd('RCPT TO:<r4@remote.example>', '452 4.5.3 Too many recipients');
    wire.close();
  });

  it('refuses a declared SIZE over the limit before DATA (552 5.3.4)', async () => {
    const wire = await loggedIn();
    await wire.cmd(`MAIL FROM:<${alice.address}> SIZE=20001`, '552 5.3.4');
    wire.close();
  });

  it('counts the bytes actually received: 552 5.3.4 mid-DATA, then hangs up without reading on', async () => {
    const wire = await loggedIn();
    const before = await outboundCount();
    await dataWith(wire, rfc5322({ from: alice.address, to: bob.address, body: 'x'.repeat(76) + '\r\n' }).repeat(1));
    wire.write(`${'y'.repeat(998)}\r\n`.repeat(30)); // 30 KB, no terminator: the server must not wait for it
    const reply = await wire.reply();
    expect(reply.last).toBe('552 5.3.4 Message size exceeds fixed limit');
    expect(await wire.closed()).toBe(true);
    expect(await outboundCount()).toBe(before);
  });

  it.each([
    ['bare LF terminator', 'body\n.\nMAIL FROM:<x@y>\n'],
    ['bare CR terminator', 'body\r.\rMAIL FROM:<x@y>\r'],
    ['CRLF . LF', 'body\r\n.\nMAIL FROM:<x@y>\r\n'],
    ['LF . CRLF', 'body\n.\r\nMAIL FROM:<x@y>\r\n'],
    ['bare CR in a line', 'one\rtwo\r\n'],
    ['bare LF in the header', 'X-Test: a\nb\r\n'],
  ])('refuses %s in DATA (554 5.6.0) and stores nothing', async (_name, smuggled) => {
    const wire = await loggedIn();
    const before = await outboundCount();
    const head = `From: ${alice.address}\r\nTo: ${bob.address}\r\nSubject: smuggle\r\n\r\n`;
    await dataWith(wire, `${head}${smuggled}\r\n.\r\n`);
    await wire.expect('554 5.6.0 Bare CR or LF in message data');
    // The session is still in sync: the smuggled MAIL was never a command.
    await wire.cmd('NOOP', '250');
    wire.close();
    expect(await outboundCount()).toBe(before);
  });

  it('caps the header section (552 5.3.4)', async () => {
    const wire = await loggedIn();
    const many = Array.from({ length: 1001 }, (_, i) => `X-H${i}: v`).join('\r\n');
    await dataWith(wire, `From: ${alice.address}\r\n${many}\r\n\r\nbody\r\n.\r\n`);
    await wire.expect('552 5.3.4 Message header too large or too many header fields');
    wire.close();
  });
});
