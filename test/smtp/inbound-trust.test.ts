import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { signMessage } from '../../src/core/state/mail/dkim-sign.js';
import { rfc5322 } from './smtp-wire.js';
import { mxPort, startSmtpTestServer } from './world.js';
import { deliverToMx, dkimKey, mxRefusal } from './mx-peer.js';

// docs/contract.md, "Sender integrity and inbound trust", port 25: our Authentication-Results on top of
// the stored raw message, arriving ones with our authserv-id removed; From in a hosted domain
// refused 550 5.7.1 unless signed by that domain's key (ours); origin, authenticated and
// authentication on messages, over HTTP and in events.

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);
const peer = dkimKey('sender.example');
let impostor: ReturnType<typeof dkimKey>;
const stored = (subject: string) =>
  q`select * from message where mailbox_id = ${alice.mailboxId} and subject = ${subject} and direction = 'inbound'`;

beforeAll(async () => {
  const domain = `trust-${randomBytes(4).toString('hex')}.test`;
  impostor = dkimKey(domain, 'evil');
  dns = await startDnsStub({
    'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_dmarc.sender.example': { TXT: ['v=DMARC1; p=reject'] },
    [peer.name]: { TXT: [peer.txt] },
    // An attacker who controls DNS answers for a hosted domain still cannot sign as it.
    [impostor.name]: { TXT: [impostor.txt] },
  });
  server = await startSmtpTestServer({ env: { SEND_RATE_LIMIT_PER_MINUTE: '1000', DNS_SERVERS: dns.server } });
  x = await server.createDomain(domain);
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('inbound trust', () => {
  it('puts our Authentication-Results on top and removes arriving ones with our authserv-id, keeping foreign ones', async () => {
    const raw = await peer.sign(
      rfc5322({
        from: 'news@sender.example',
        to: alice.address,
        subject: 'forged results',
        headers: [
          'Authentication-Results: mail.test; dkim=pass header.d=bank.example; dmarc=pass',
          'Authentication-Results: (comment) MAIL.TEST;',
          '\tspf=pass smtp.mailfrom=bank.example',
          'Authentication-Results: relay.other.example; spf=pass',
        ],
      }),
    );
    expect((await deliverToMx(mxPort(server), { from: 'b@sender.example', to: alice.address }, raw)).response).toMatch(
      /^250 /,
    );
    const [row] = await stored('forged results');
    const text = (await server.runtime.services.blobs.get(row.raw_blob_key)).toString();
    const header = text.slice(0, text.indexOf('\r\n\r\n'));
    const ours = header.match(/^Authentication-Results:\s*mail\.test;/gim) ?? [];
    expect(ours).toHaveLength(1);
    expect(header.indexOf('Authentication-Results: mail.test;')).toBe(0);
    expect(header).toMatch(/^Authentication-Results: mail\.test;[^]*dkim=pass[^]*header\.d=sender\.example/);
    expect(header).not.toContain('bank.example');
    expect(header).toContain('Authentication-Results: relay.other.example; spf=pass');
    expect(header).toMatch(/\r\nReceived: from /);
  });

  const hostedVariants: [string, () => Promise<string>][] = [
    ['unsigned', async () => rfc5322({ from: `ceo@${x.name}`, to: alice.address, subject: 'wire money' })],
    [
      'signed by a key DNS publishes for the hosted domain, not ours',
      async () => impostor.sign(rfc5322({ from: `ceo@${x.name}`, to: alice.address, subject: 'wire money' })),
    ],
    [
      'signed by another domain',
      async () => peer.sign(rfc5322({ from: `ceo@${x.name}`, to: alice.address, subject: 'wire money' })),
    ],
    [
      'a foreign From first and a hosted From second, signed by the foreign domain',
      async () =>
        peer.sign(
          rfc5322({
            from: 'news@sender.example',
            to: alice.address,
            subject: 'wire money',
            headers: [`From: ceo@${x.name}`],
          }),
        ),
    ],
    [
      'a hosted address inside a From group',
      async () =>
        peer.sign(
          rfc5322({ from: `board: news@sender.example, ceo@${x.name};`, to: alice.address, subject: 'wire money' }),
        ),
    ],
  ];

  it.each(hostedVariants)('refuses a hosted-domain From %s with 550 5.7.1 and stores nothing', async (_n, make) => {
    // Both paths: the envelope sender's domain is read with RCPT TO, any other From domain at the
    // end of DATA (InboundService.requireHostedSignature).
    for (const from of ['b@sender.example', `ceo@${x.name}`, `CEO@${x.name.toUpperCase()}`]) {
      const reply = await mxRefusal(mxPort(server), { from, to: alice.address }, await make());
      expect(reply, `MAIL FROM:<${from}>`).toMatch(/^550 5\.7\.1 /);
    }
    expect(await stored('wire money')).toHaveLength(0);
  });

  it('accepts hosted-domain mail signed with our own key, as external and DKIM-passing', async () => {
    const key = await server.runtime.services.transport.dkim.forDomain(x.domainId);
    const raw = rfc5322({ from: `ceo@${x.name}`, to: alice.address, subject: 'really from us' });
    const signed = await signMessage(Buffer.from(raw), key, new Date());
    expect(signed.signed).toBe(true);
    expect(
      (await deliverToMx(mxPort(server), { from: `ceo@${x.name}`, to: alice.address }, signed.raw)).response,
    ).toMatch(/^250 /);
    const [row] = await stored('really from us');
    const detail = await server.api(alice.token).get(`/api/messages/${row.id}`);
    expect(detail.body.data).toMatchObject({ origin: 'external', authentication: { dkim: 'pass' } });
  });

  it('shows origin, authenticated and authentication over HTTP and in message.received', async () => {
    const raw = await peer.sign(rfc5322({ from: 'news@sender.example', to: alice.address, subject: 'shown' }));
    await deliverToMx(mxPort(server), { from: 'b@sender.example', to: alice.address }, raw);
    const forged = rfc5322({ from: 'news@sender.example', to: alice.address, subject: 'shown unsigned' });
    await deliverToMx(mxPort(server), { from: 'x@forger.example', to: alice.address }, forged);
    expect((await server.api(alice.token).post('/api/messages/send', sendBody(alice.address))).status).toBe(202);

    const list = await server.api(alice.token).get('/api/messages?limit=50');
    const bySubject = new Map<string, any>(list.body.data.items.map((m: any) => [m.subject, m]));
    expect(bySubject.get('shown')).toMatchObject({ origin: 'external', authenticated: true });
    expect(bySubject.get('shown unsigned')).toMatchObject({ origin: 'external', authenticated: false });
    const sent = list.body.data.items.find((m: any) => m.direction === 'outbound');
    expect(sent).toMatchObject({ origin: 'internal', authenticated: true });

    const good = await server.api(alice.token).get(`/api/messages/${bySubject.get('shown').messageId}`);
    expect(good.body.data.authentication).toEqual({ spf: 'pass', dkim: 'pass', dmarc: 'pass' });
    const bad = await server.api(alice.token).get(`/api/messages/${bySubject.get('shown unsigned').messageId}`);
    expect(bad.body.data.authentication).toMatchObject({ dkim: 'none' });
    expect(bad.body.data.authentication.dmarc).not.toBe('pass');
    const mine = await server.api(alice.token).get(`/api/messages/${sent.messageId}`);
    expect(mine.body.data).toMatchObject({ origin: 'internal', authenticated: true, authentication: null });

    const events =
      await q`select payload from mailbox_event where mailbox_id = ${alice.mailboxId} and type = 'message.received'`;
    const shownEvent = events.find((e) => e.payload.data.subject === 'shown');
    expect(shownEvent.payload.data).toMatchObject({ origin: 'external', authenticated: true });
    const sentEvents =
      await q`select payload from mailbox_event where mailbox_id = ${alice.mailboxId} and type = 'message.sent'`;
    expect(sentEvents[0].payload.data).toMatchObject({ origin: 'internal', authenticated: true });
  });
});
