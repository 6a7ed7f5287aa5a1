import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf } from '../delivery/helpers.js';
import { prepareForTransfer } from '../../src/core/state/mail/raw-headers.js';
import { rfc5322, type SmtpWire } from './smtp-wire.js';
import { addAlias, loggedInWire, startSmtpTestServer } from './world.js';

// docs/contract.md, "Sender integrity and inbound trust": submission (587) refuses with 550 5.7.1 more
// than one From field, a From with more than one address or one that does not parse, and a
// Sender that is not an active identity of the authorised mailbox; Bcc and every Resent-* field
// are removed before relay.

let server: TestServer;
let alice: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };
let aliasAddress: string;
const q = rowsOf(() => server);
const outboundCount = async () =>
  (await q`select count(*)::int as n from message where mailbox_id = ${alice.mailboxId}`)[0].n as number;

beforeAll(async () => {
  server = await startSmtpTestServer({ env: { SEND_RATE_LIMIT_PER_MINUTE: '1000' } });
  const x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  bob = await server.createMailbox(x.token, `bob@${x.name}`, 'Bob');
  aliasAddress = `team@${x.name}`;
  await addAlias(server, alice.mailboxId, aliasAddress);
});
afterAll(async () => {
  await server?.close();
});

async function submitRaw(wire: SmtpWire, raw: string): Promise<string> {
  await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
  await wire.cmd(`RCPT TO:<${bob.address}>`, 250);
  await wire.cmd('DATA', 354);
  wire.write(`${raw}.\r\n`);
  return (await wire.reply()).last;
}

const message = (from: string, headers: string[] = []) => rfc5322({ from, to: bob.address, headers });

describe('sender integrity on submission', () => {
  const variants: [string, () => string][] = [
    ['a second From field naming another author', () => message(alice.address, [`From: ${bob.address}`])],
    ['a second From field naming the same author', () => message(alice.address, [`From: ${alice.address}`])],
    ['a From with two addresses', () => message(`${alice.address}, ${bob.address}`)],
    ['a From group with two addresses', () => message(`authors: ${alice.address}, ${bob.address};`)],
    ['a From that does not parse', () => message('not an address at all')],
    ['no From field', () => `To: ${bob.address}\r\nSubject: none\r\n\r\nbody\r\n`],
    ['a Sender that is not an identity', () => message(alice.address, [`Sender: ${bob.address}`])],
    ['two Sender fields', () => message(alice.address, [`Sender: ${alice.address}`, `Sender: ${aliasAddress}`])],
    ['a Sender with two addresses', () => message(alice.address, [`Sender: ${alice.address}, ${aliasAddress}`])],
  ];

  it.each(variants)('refuses %s with 550 5.7.1 and stores nothing', async (_name, raw) => {
    const wire = await loggedInWire(server, alice);
    const before = await outboundCount();
    expect(await submitRaw(wire, raw())).toMatch(/^550 5\.7\.1 /);
    expect(await outboundCount()).toBe(before);
    wire.close();
  });

  it('accepts one From and a Sender that are identities of the mailbox (an active alias)', async () => {
    const wire = await loggedInWire(server, alice);
    const before = await outboundCount();
    expect(await submitRaw(wire, message(`"Alice" <${alice.address}>`, [`Sender: Team <${aliasAddress}>`]))).toMatch(
      /^250 /,
    );
    expect(await outboundCount()).toBe(before + 1);
    wire.close();
  });
});

describe('header surgery before relay', () => {
  it('removes Bcc and every Resent-* field, folded ones included, and keeps the rest byte for byte', () => {
    const raw = Buffer.from(
      [
        'From: a@x.test',
        'Resent-From: boss@x.test',
        'Resent-Bcc: hidden@y.test,',
        '\tsecond-hidden@y.test',
        'resent-to: z@y.test',
        'Resent-Message-ID: <r@x.test>',
        'Bcc: blind@y.test',
        'To: b@y.test',
        'X-Resent-Note: stays',
        'Subject: hi',
        '',
        'Resent-Bcc: in the body stays',
        '',
      ].join('\r\n'),
    );
    const out = prepareForTransfer(raw, { messageId: '<m@x.test>', date: new Date(0) }).toString('latin1');
    const header = out.slice(0, out.indexOf('\r\n\r\n'));
    expect(header).not.toMatch(/^(resent-|bcc)/im);
    expect(out).not.toContain('second-hidden');
    expect(out).toContain('X-Resent-Note: stays\r\n');
    expect(out).toContain('\r\n\r\nResent-Bcc: in the body stays\r\n');
    expect(out).toMatch(/^Message-ID: <m@x\.test>\r\n/);
  });
});
