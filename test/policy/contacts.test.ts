import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/harness.js';
import { rowsOf, sendBody, twoMailboxes, waitFor } from '../delivery/helpers.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import { mxPort, startSmtpTestServer } from '../smtp/world.js';
import { deliverToMx, dkimKey } from '../smtp/mx-peer.js';

// "New recipient" (docs/api.md, "Outbound policy"; docs/trust.md, "Known contacts"): an address
// the mailbox never wrote to in a message that left without approval or was approved, and never
// received authenticated mail from (internal, or DMARC passed). Mail whose sender is not
// authenticated (SPF none, a null return path, a forged From) makes nobody known: one such mail
// would otherwise open `approval: new-recipients` to the forger's address. Every path that makes
// an address contacted writes mailbox_contact in its own transaction; a mailbox under
// `approval: new-recipients` shows each rule as held (new) or queued (contacted).

let server: TestServer;
let dns: Awaited<ReturnType<typeof startDnsStub>>;
const peer = dkimKey('sender.example');
let world: Awaited<ReturnType<typeof twoMailboxes>>;
const q = rowsOf(() => server);

async function setPolicy(policy: Record<string, unknown>) {
  const res = await server.api(world.domain.token).put(`/api/domain/mailboxes/${world.a.mailboxId}/policy`, policy);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** Alice sends to `to`; the status says whether the policy saw a new recipient. */
async function send(to: string): Promise<{ messageId: string; status: string }> {
  const res = await server.api(world.a.token).post('/api/messages/send', sendBody(to));
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.data;
}

const contacts = async () =>
  (await q`select address from mailbox_contact where mailbox_id = ${world.a.mailboxId} order by address`).map(
    (r) => r.address as string,
  );

beforeAll(async () => {
  dns = await startDnsStub({
    'sender.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_dmarc.sender.example': { TXT: ['v=DMARC1; p=reject'] },
    [peer.name]: { TXT: [peer.txt] },
    'evil.example': { TXT: ['v=spf1 +all'] },
  });
  server = await startSmtpTestServer({
    roles: ['api', 'worker', 'smtp'],
    env: { WORKER_POLL_INTERVAL: '50ms', DNS_SERVERS: dns.server },
  });
  world = await twoMailboxes(server);
  await setPolicy({ approval: 'new-recipients' });
}, 180_000);
afterAll(async () => {
  await server?.close();
  await dns?.close();
});

/** Port-25 mail to alice from `from`, with `envelope` as the return path ('' is the null path). */
const inbound = (from: string, envelope: string, subject: string, sign = false) =>
  (sign
    ? peer.sign(rfc5322({ from, to: world.a.address, subject }))
    : Promise.resolve(rfc5322({ from, to: world.a.address, subject }))
  ).then((raw) => deliverToMx(mxPort(server), { from: envelope, to: world.a.address }, raw));
const authenticatedOf = async (subject: string) =>
  (
    await q`select auth_results #>> '{dmarc,result}' as dmarc from message where mailbox_id = ${world.a.mailboxId} and subject = ${subject}`
  )[0]?.dmarc;

describe('contacts of a mailbox (new recipients)', () => {
  it('a held message makes nobody contacted; its approval does, its rejection does not', async () => {
    const first = await send('one@remote.test');
    expect(first.status).toBe('pending_approval');
    expect((await send('one@remote.test')).status).toBe('pending_approval'); // still new while held
    expect(await contacts()).not.toContain('one@remote.test');

    const approver = await server
      .api(world.domain.token)
      .post(`/api/domain/mailboxes/${world.a.mailboxId}/access-tokens`, {
        tokenName: 'approver',
        scopes: ['MailboxApprove'],
      });
    expect(approver.status).toBe(201);
    const approve = await server.api(approver.body.data.accessToken).post(`/api/messages/${first.messageId}/approve`);
    expect(approve.status).toBe(200);
    expect(await contacts()).toContain('one@remote.test');
    expect((await send('one@remote.test')).status).toBe('queued');

    const other = await send('two@remote.test');
    const reject = await server.api(approver.body.data.accessToken).post(`/api/messages/${other.messageId}/reject`);
    expect(reject.status).toBe(200);
    expect((await send('two@remote.test')).status).toBe('pending_approval');
    expect(await contacts()).not.toContain('two@remote.test');
  });

  it('a message that leaves without approval makes its recipients contacted, and deleting it keeps them', async () => {
    await setPolicy({ approval: 'none' });
    const sent = await send('three@remote.test');
    expect(sent.status).toBe('queued');
    await setPolicy({ approval: 'new-recipients' });
    expect((await send('three@remote.test')).status).toBe('queued');
    expect((await server.api(world.a.token).delete(`/api/messages/${sent.messageId}`)).status).toBe(200);
    expect((await send('three@remote.test')).status).toBe('queued');
  });

  it('unauthenticated mail makes nobody known: SPF none, a null return path, SPF pass without DMARC', async () => {
    await setPolicy({ approval: 'new-recipients' });
    await inbound('drop@evil.example', 'bounce@unknown-spf.example', 'spf none');
    await inbound('drop2@evil.example', '', 'null path');
    // SPF passes for evil.example (+all) but it publishes no DMARC: not aligned authentication.
    await inbound('drop3@evil.example', 'drop3@evil.example', 'spf pass only');
    for (const subject of ['spf none', 'null path', 'spf pass only'])
      expect(await authenticatedOf(subject)).not.toBe('pass');
    expect(await contacts()).not.toEqual(expect.arrayContaining([expect.stringMatching(/@evil\.example$/)]));
    for (const to of ['drop@evil.example', 'drop2@evil.example', 'drop3@evil.example'])
      expect((await send(to)).status, to).toBe('pending_approval');
  });

  it('external mail whose DMARC passed makes its sender known', async () => {
    await inbound('Desk@Sender.example', 'b@sender.example', 'dmarc pass', true);
    expect(await authenticatedOf('dmarc pass')).toBe('pass');
    expect(await contacts()).toContain('desk@sender.example');
    expect((await send('desk@sender.example')).status).toBe('queued');
  });

  it('internal mail (a mailbox here) makes its sender contacted (lower-cased, as recipients are compared)', async () => {
    expect(await contacts()).not.toContain(world.b.address);
    const res = await server
      .api(world.b.token)
      .post('/api/messages/send', sendBody(world.a.address, { subject: 'From Bob' }));
    expect(res.status).toBe(202);
    await waitFor(
      async () => (await q`select 1 from message where mailbox_id = ${world.a.mailboxId} and subject = 'From Bob'`)[0],
      15_000,
      'local delivery to alice',
    );
    expect(await contacts()).toContain(world.b.address);
    expect((await send(world.b.address.toUpperCase())).status).toBe('queued');
  });
});
