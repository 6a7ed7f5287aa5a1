import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { loggedInWire, mxPort, startSmtpTestServer, submissionPort } from './world.js';
import { deliverToMx } from './mx-peer.js';

// What each port offers in its EHLO and how it answers what it did not offer (docs/wire.md).
let server: TestServer;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
let jorg: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };

beforeAll(async () => {
  server = await startSmtpTestServer({ env: { SEND_RATE_LIMIT_PER_MINUTE: '1000' } });
  x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  jorg = await server.createMailbox(x.token, `jörg@${x.name}`, 'Jörg');
  bob = await server.createMailbox(x.token, `bob@${x.name}`, 'Bob');
});
afterAll(async () => {
  await server?.close();
});

const mxWire = async (): Promise<SmtpWire> => {
  const wire = await SmtpWire.connect(mxPort(server));
  await wire.ehlo('peer.example');
  return wire;
};

describe('EHLO', () => {
  it('offers 8BITMIME and SMTPUTF8 on 25 and 587, and neither DSN nor REQUIRETLS', async () => {
    const mx = await SmtpWire.connect(mxPort(server));
    const offered = await mx.ehlo();
    expect(offered).toEqual(expect.arrayContaining(['PIPELINING', '8BITMIME', 'SMTPUTF8', 'ENHANCEDSTATUSCODES']));
    expect(offered.some((l) => /^(DSN|REQUIRETLS)$/.test(l))).toBe(false);
    await mx.starttls();
    expect((await mx.ehlo()).some((l) => /^(DSN|REQUIRETLS)$/.test(l))).toBe(false);
    mx.close();
    const sub = await SmtpWire.connect(submissionPort(server));
    await sub.ehlo();
    await sub.starttls();
    const after = await sub.ehlo();
    expect(after).toEqual(expect.arrayContaining(['8BITMIME', 'SMTPUTF8']));
    expect(after.some((l) => /^(DSN|REQUIRETLS)$/.test(l))).toBe(false);
    sub.close();
  });
});

describe('MAIL and RCPT parameters (RFC 5321 §4.1.1.11)', () => {
  it('answers 555 5.5.4 to a parameter that was not advertised, on 25', async () => {
    const wire = await mxWire();
    await wire.cmd('MAIL FROM:<a@peer.example> FOO=BAR', '555 5.5.4');
    await wire.cmd('MAIL FROM:<a@peer.example> RET=HDRS ENVID=abc', '555 5.5.4');
    await wire.cmd('MAIL FROM:<a@peer.example> BODY=8BITMIME SIZE=100 SMTPUTF8', 250);
    await wire.cmd(`RCPT TO:<${alice.address}> NOTIFY=NEVER`, '555 5.5.4');
    await wire.cmd(`RCPT TO:<${alice.address}> ORCPT=rfc822;${alice.address}`, '555 5.5.4');
    await wire.cmd(`RCPT TO:<${alice.address}>`, 250);
    wire.close();
  });

  it('takes AUTH= on submission only, where AUTH is offered', async () => {
    const sub = await loggedInWire(server, alice);
    await sub.cmd(`MAIL FROM:<${alice.address}> AUTH=<>`, 250);
    await sub.cmd('RSET', 250);
    await sub.cmd(`MAIL FROM:<${alice.address}> FOO=BAR`, '555 5.5.4');
    sub.close();
    const mx = await mxWire();
    await mx.cmd('MAIL FROM:<a@peer.example> AUTH=<>', '555 5.5.4');
    mx.close();
  });

  it('answers 553 5.6.7 to a UTF-8 address without SMTPUTF8, and takes it with the parameter', async () => {
    const wire = await mxWire();
    await wire.cmd('MAIL FROM:<jörg@bücher.example>', '553 5.6.7');
    await wire.cmd('MAIL FROM:<a@peer.example>', 250);
    await wire.cmd(`RCPT TO:<${jorg.address}>`, '553 5.6.7');
    await wire.cmd('RSET', 250);
    await wire.cmd('MAIL FROM:<jörg@bücher.example> SMTPUTF8', 250);
    await wire.cmd(`RCPT TO:<${jorg.address}>`, 250);
    wire.close();
  });
});

describe('internationalized mail on 25 (RFC 6531, 6532)', () => {
  it('stores and shows a UTF-8 sender and display name as sent, to a UTF-8 mailbox', async () => {
    const raw = Buffer.from(
      rfc5322({ from: 'Jörg Müller <jörg@bücher.example>', to: jorg.address, subject: 'Grüße aus München' }),
    );
    const { response } = await deliverToMx(mxPort(server), { from: 'jörg@bücher.example', to: jorg.address }, raw);
    expect(response).toMatch(/^250 /);
    const list = await server.api(jorg.token).get('/api/messages?direction=inbound');
    const item = list.body.data.items.find((m: { subject: string }) => m.subject === 'Grüße aus München');
    expect(item).toMatchObject({ fromAddress: 'jörg@bücher.example', fromDisplayName: 'Jörg Müller' });
  });
});

describe('submission line length (RFC 5322 §2.1.1)', () => {
  it('refuses a line longer than 998 octets with 550 5.6.0, and takes one of 998', async () => {
    const wire = await loggedInWire(server, alice);
    const submit = async (line: string) => {
      await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
      await wire.cmd(`RCPT TO:<${bob.address}>`, 250);
      await wire.cmd('DATA', 354);
      wire.write(`${rfc5322({ from: alice.address, to: bob.address, body: line })}.\r\n`);
      return wire.reply();
    };
    expect((await submit('x'.repeat(1500))).last).toMatch(/^550 5\.6\.0 /);
    expect((await submit('y'.repeat(998))).last).toMatch(/^250 /);
    wire.close();
  });
});

describe('inline parts (RFC 2392)', () => {
  it('gives each attachment its Content-ID and disposition, so cid: in bodyHtml resolves', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');
    const raw = [
      `From: Sender <news@peer.example>`,
      `To: ${alice.address}`,
      'Subject: with an inline logo',
      'MIME-Version: 1.0',
      'Content-Type: multipart/related; boundary="rel"',
      '',
      '--rel',
      'Content-Type: text/html; charset=utf-8',
      '',
      '<p>Logo: <img src="cid:logo@peer.example"></p>',
      '--rel',
      'Content-Type: image/png; name="logo.png"',
      'Content-Transfer-Encoding: base64',
      'Content-ID: <logo@peer.example>',
      'Content-Disposition: inline; filename="logo.png"',
      '',
      png,
      '--rel',
      'Content-Type: application/pdf; name="terms.pdf"',
      'Content-Transfer-Encoding: base64',
      'Content-Disposition: attachment; filename="terms.pdf"',
      '',
      Buffer.from('%PDF-1.4').toString('base64'),
      '--rel--',
      '',
    ].join('\r\n');
    await deliverToMx(mxPort(server), { from: 'news@peer.example', to: alice.address }, raw);
    const list = await server.api(alice.token).get('/api/messages?direction=inbound');
    const id = list.body.data.items.find((m: { subject: string }) => m.subject === 'with an inline logo').messageId;
    const detail = (await server.api(alice.token).get(`/api/messages/${id}`)).body.data;
    expect(detail.bodyHtml).toContain('cid:logo@peer.example');
    expect(detail.attachments).toEqual([
      expect.objectContaining({ filename: 'logo.png', contentId: 'logo@peer.example', disposition: 'inline' }),
      expect.objectContaining({ filename: 'terms.pdf', contentId: null, disposition: 'attachment' }),
    ]);
  });
});
