import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { rowsOf, sendBody, twoMailboxes, waitFor } from '../delivery/helpers.js';

// "New recipient" (docs/api.md, "Outbound policy"): an address the mailbox never wrote to in a
// message that left without approval or was approved, and never received mail from. Every path
// that makes an address contacted writes mailbox_contact in its own transaction; a mailbox under
// `approval: new-recipients` shows each rule as held (new) or queued (contacted).

let server: TestServer;
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
  server = await startTestServer({ roles: ['api', 'worker'], env: { WORKER_POLL_INTERVAL: '50ms' } });
  world = await twoMailboxes(server);
  await setPolicy({ approval: 'new-recipients' });
}, 180_000);
afterAll(() => server?.close());

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

  it('mail received from an address makes it contacted (lower-cased, as recipients are compared)', async () => {
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
