import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody } from '../delivery/helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { SmtpWire, rfc5322 } from './smtp-wire.js';
import { addAlias, mxPort, startSmtpTestServer, submissionPort } from './world.js';
import { deliverToMx, dkimKey, mxRefusal } from './mx-peer.js';

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
let x: { domainId: string; name: string; token: string };
let alice: { mailboxId: string; address: string; token: string };
let bob: { mailboxId: string; address: string; token: string };
const q = rowsOf(() => server);
const key = dkimKey('sender.example');
const inboundOf = (mailboxId: string) =>
  q`select * from message where mailbox_id = ${mailboxId} and direction = 'inbound' order by created_at`;

beforeAll(async () => {
  dns = await startDnsStub({
    'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_dmarc.sender.example': { TXT: ['v=DMARC1; p=reject'] },
    [key.name]: { TXT: [key.txt] },
    'forger.example': { TXT: ['v=spf1 ip4:192.0.2.1 -all'] },
    '_dmarc.forger.example': { TXT: ['v=DMARC1; p=reject'] },
  });
  server = await startSmtpTestServer({ env: { DNS_SERVERS: dns.server } });
  x = await server.createDomain();
  alice = await server.createMailbox(x.token, `alice@${x.name}`, 'Alice');
  bob = await server.createMailbox(x.token, `bob@${x.name}`, 'Bob');
  await addAlias(server, alice.mailboxId, `sales@${x.name}`);
  await addAlias(server, alice.mailboxId, `old@${x.name}`, { active: false });
});
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

describe('inbound MX', () => {
  it('stores mail for a hosted address with SPF, DKIM and DMARC verdicts, a Received header and message.received', async () => {
    const raw = await key.sign(
      rfc5322({
        from: 'Sender <news@sender.example>',
        to: alice.address,
        subject: 'Signed hello',
        headers: ['Message-ID: <signed-1@sender.example>'],
      }),
    );
    const { response } = await deliverToMx(mxPort(server), { from: 'bounce@sender.example', to: alice.address }, raw);
    expect(response).toMatch(/^250 2\.0\.0 /);
    const [row] = (await inboundOf(alice.mailboxId)).filter((r) => r.subject === 'Signed hello');
    expect(row).toMatchObject({
      from_address: 'news@sender.example',
      from_display_name: 'Sender',
      to_addresses: [alice.address],
      internet_message_id: '<signed-1@sender.example>',
      is_read: false,
    });
    expect(row.auth_results).toMatchObject({
      spf: { result: 'pass' },
      dkim: [{ result: 'pass', domain: 'sender.example', selector: 'sel' }],
      dmarc: { result: 'pass' },
    });
    expect(row.auth_results.headers).toMatch(/Authentication-Results: mail\.test;/);
    const rawText = (await server.runtime.services.blobs.get(row.raw_blob_key)).toString();
    // docs/contract.md: our Authentication-Results (authserv-id = SMTP_HOSTNAME) on top, with the trace fields.
    expect(rawText).toMatch(
      /^Authentication-Results: mail\.test;[^]*?\r\nReceived: from peer\.sender\.example \(\[127\.0\.0\.1\]\)\r\n\tby mail\.test with ESMTPS id /,
    );
    expect(rawText.indexOf('Authentication-Results:')).toBe(0);
    expect(rawText).toContain('DKIM-Signature:');
    const events =
      await q`select type, payload from mailbox_event where mailbox_id = ${alice.mailboxId} and type = 'message.received'`;
    expect(events.some((e) => e.payload.data.messageId === row.id)).toBe(true);
  });

  it('records SPF and DMARC failures of a forged sender but still accepts (the verdict is for the owner)', async () => {
    const raw = rfc5322({ from: 'ceo@forger.example', to: alice.address, subject: 'Forged' });
    await deliverToMx(mxPort(server), { from: 'ceo@forger.example', to: alice.address }, raw);
    const [row] = (await inboundOf(alice.mailboxId)).filter((r) => r.subject === 'Forged');
    expect(row.auth_results).toMatchObject({
      spf: { result: 'fail' },
      dkim: [{ result: 'none' }],
      dmarc: { result: 'fail' },
    });
  });

  it('delivers to an active alias, one copy per mailbox even when primary and alias are both recipients', async () => {
    const raw = rfc5322({
      from: 'peer@sender.example',
      to: `sales@${x.name}, ${alice.address}, ${bob.address}`,
      subject: 'Fan-out',
    });
    await deliverToMx(
      mxPort(server),
      { from: 'peer@sender.example', to: [`sales@${x.name}`, alice.address, bob.address] },
      raw,
    );
    expect((await inboundOf(alice.mailboxId)).filter((r) => r.subject === 'Fan-out')).toHaveLength(1);
    expect((await inboundOf(bob.mailboxId)).filter((r) => r.subject === 'Fan-out')).toHaveLength(1);
  });

  it('accepts the null sender (bounces) and mail without a From header', async () => {
    await deliverToMx(mxPort(server), { from: '', to: bob.address }, 'Subject: no from\r\n\r\nbody\r\n');
    const [row] = (await inboundOf(bob.mailboxId)).filter((r) => r.subject === 'no from');
    expect(row.from_address).toBe('');
  });

  it('threads an inbound reply into the thread of the outbound message it answers', async () => {
    const sent = await server
      .api(alice.token)
      .post('/api/messages/send', sendBody('friend@sender.example', { subject: 'Thread root' }));
    const [parent] = await q`select internet_message_id from message where id = ${sent.body.data.messageId}`;
    await deliverToMx(
      mxPort(server),
      { from: 'friend@sender.example', to: alice.address },
      rfc5322({
        from: 'friend@sender.example',
        to: alice.address,
        subject: 'Re: Thread root',
        headers: [`In-Reply-To: ${parent.internet_message_id}`, `References: ${parent.internet_message_id}`],
      }),
    );
    const [reply] = (await inboundOf(alice.mailboxId)).filter((r) => r.subject === 'Re: Thread root');
    expect(reply).toMatchObject({
      thread_id: sent.body.data.threadId,
      in_reply_to_message_id: sent.body.data.messageId,
    });
  });

  it('refuses unknown local parts (550 5.1.1), inactive aliases, and other domains (550 5.7.1)', async () => {
    const raw = rfc5322({ from: 'peer@sender.example', to: 'x' });
    expect(await mxRefusal(mxPort(server), { from: 'peer@sender.example', to: `nobody@${x.name}` }, raw)).toMatch(
      /^550 5\.1\.1 /,
    );
    expect(await mxRefusal(mxPort(server), { from: 'peer@sender.example', to: `old@${x.name}` }, raw)).toMatch(
      /^550 5\.1\.1 /,
    );
    expect(await mxRefusal(mxPort(server), { from: 'peer@sender.example', to: 'someone@remote.example' }, raw)).toMatch(
      /^550 5\.7\.1 Relaying denied/,
    );
  });
});

describe('never an open relay, on either port', () => {
  const patterns = (hosted: string) => [
    `victim@remote.example`,
    `victim%remote.example@${hosted}`,
    `remote.example!victim@${hosted}`,
    `"victim@remote.example"@${hosted}`,
    `victim@[127.0.0.1]`,
    `@${hosted}:victim@remote.example`,
    `victim@remote.example@${hosted}`,
  ];

  it('refuses every relay pattern on the MX port and stores or queues nothing', async () => {
    const before = (await q`select count(*)::int as n from message`)[0].n;
    const replies: string[] = [];
    for (const rcpt of patterns(x.name)) {
      const wire = await SmtpWire.connect(mxPort(server));
      await wire.ehlo('peer.sender.example');
      await wire.cmd('MAIL FROM:<peer@sender.example>', 250);
      replies.push(`${rcpt} → ${(await wire.cmd(`RCPT TO:<${rcpt}>`)).last}`);
      await wire.cmd('DATA', 503); // no valid recipient: no transaction to fill
      wire.close();
    }
    expect(replies.filter((r) => !/→ 5\d\d 5\./.test(r))).toEqual([]);
    expect((await q`select count(*)::int as n from message`)[0].n).toBe(before);
  });

  it('refuses every relay pattern on the submission port without AUTH', async () => {
    for (const rcpt of patterns(x.name)) {
      const wire = await SmtpWire.connect(submissionPort(server));
      await wire.ehlo();
      await wire.starttls();
      await wire.ehlo();
      await wire.cmd('MAIL FROM:<peer@sender.example>', '530 5.7.0');
      expect((await wire.cmd(`RCPT TO:<${rcpt}>`)).last).toMatch(/^5\d\d 5\./);
      wire.close();
    }
  });

  it('does not offer AUTH on the MX port', async () => {
    const wire = await SmtpWire.connect(mxPort(server));
    const lines = await wire.ehlo('peer.sender.example');
    expect(lines.some((l) => l.startsWith('AUTH'))).toBe(false);
    expect(lines).toContain('STARTTLS');
    expect(
      (await wire.cmd(`AUTH PLAIN ${Buffer.from(`\0${alice.address}\0${alice.token}`).toString('base64')}`)).code,
    ).toBeGreaterThanOrEqual(500);
    wire.close();
  });
});
