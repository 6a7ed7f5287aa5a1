import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { recipientsOfMessage, runWorkerUntil, startTransportServer } from '../transport/world.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import { loggedInWire, mxPort } from '../smtp/world.js';
import { mxRefusal } from '../smtp/mx-peer.js';
import { recordFigure, zeroFigure } from './support/figures.js';

// Trust figures: impersonation attempts on 587 and 25 (0 accepted), and direct MX delivery to
// private targets (0 connections to a listener on one). The rules themselves are tested in
// test/smtp/sender-integrity, test/smtp/inbound-trust and test/transport/mx-network-targets.

const SUITE = 'trust';
let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let trap: net.Server;
let trapConnections = 0;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);

beforeAll(async () => {
  trap = net.createServer((s) => {
    trapConnections++;
    s.end('220 trap\r\n');
  });
  await new Promise<void>((r) => trap.listen(0, '127.0.0.1', () => r()));
  dns = await startDnsStub({
    'loopback.test': { MX: [{ priority: 10, exchange: 'mx.loopback.test' }] },
    'mx.loopback.test': { A: ['127.0.0.1'] },
    'private.test': { MX: [{ priority: 10, exchange: 'mx.private.test' }] },
    'mx.private.test': { A: ['10.1.2.3', '192.168.0.10', '172.31.0.1', '100.64.0.1'] },
    'metadata.test': { A: ['169.254.169.254'], AAAA: ['fd00:ec2::254', '::1', '::ffff:127.0.0.1'] },
  });
  server = await startTransportServer({
    SMTP_DELIVERY: 'mx',
    SMTP_DELIVERY_PORT: String((trap.address() as net.AddressInfo).port),
    DNS_SERVERS: dns.server,
  });
  x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  bob = await server.createMailbox(x.token, `bob@${x.name}`, 'Bob');
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
  await new Promise((r) => trap.close(r));
});

describe('impersonation and private targets', () => {
  it('accepts none of the impersonation variants on 587 and 25', async () => {
    const submissions: Record<string, string> = {
      'two From fields': rfc5322({ from: alice.address, to: bob.address, headers: [`From: ${bob.address}`] }),
      'From with two addresses': rfc5322({ from: `${alice.address}, ${bob.address}`, to: bob.address }),
      'unparsable From': rfc5322({ from: 'nobody', to: bob.address }),
      'foreign Sender': rfc5322({ from: alice.address, to: bob.address, headers: [`Sender: ${bob.address}`] }),
      'From another mailbox': rfc5322({ from: bob.address, to: bob.address }),
    };
    let accepted = 0;
    for (const raw of Object.values(submissions)) {
      const wire = await loggedInWire(server, alice);
      await wire.cmd(`MAIL FROM:<${alice.address}>`, 250);
      await wire.cmd(`RCPT TO:<${bob.address}>`, 250);
      await wire.cmd('DATA', 354);
      wire.write(`${raw}.\r\n`);
      if ((await wire.reply()).code === 250) accepted++;
      wire.close();
    }
    const inbound: Record<string, string> = {
      'hosted From, unsigned': rfc5322({ from: `ceo@${x.name}`, to: bob.address, subject: 'imp' }),
      'foreign From then hosted From': rfc5322({
        from: 'a@elsewhere.example',
        to: bob.address,
        subject: 'imp',
        headers: [`From: ceo@${x.name}`],
      }),
      'hosted From in a group': rfc5322({
        from: `g: a@elsewhere.example, ceo@${x.name};`,
        to: bob.address,
        subject: 'imp',
      }),
    };
    for (const raw of Object.values(inbound)) {
      const reply = await mxRefusal(mxPort(server), { from: 'x@elsewhere.example', to: bob.address }, raw);
      if (!reply.startsWith('550 5.7.1')) accepted++;
    }
    const stored = (
      await q`select count(*)::int as n from message where mailbox_id = ${bob.mailboxId} and subject = 'imp'`
    )[0].n as number;
    const variants = Object.keys(submissions).length + Object.keys(inbound).length;
    zeroFigure(SUITE, `impersonation variants accepted (${variants}: 587 and 25)`, accepted + stored);
    expect(accepted + stored).toBe(0);
  });

  it('opens no connection to private, loopback, link-local or metadata MX targets', async () => {
    const to = ['a@loopback.test', 'b@private.test', 'c@metadata.test'];
    const id = (await server.api(alice.token).post('/api/messages/send', sendBody(to))).body.data.messageId as string;
    await runWorkerUntil(
      server,
      async () => (await q`select delivery_status from message where id = ${id}`)[0].delivery_status === 'failed',
      'failed',
    );
    const leaked = (await recipientsOfMessage(server, id)).filter((r) => /\d+\.\d+\.\d+\.\d+|::/.test(r.remote_reply));
    zeroFigure(SUITE, 'connections to a listener on 127.0.0.1 named by hostile MX records', trapConnections);
    recordFigure({
      suite: SUITE,
      name: 'stored replies naming an address',
      value: leaked.length,
      target: '= 0',
      pass: leaked.length === 0,
    });
    expect(trapConnections).toBe(0);
    expect(leaked).toEqual([]);
  });
});
