import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { deliverToMx } from '../smtp/mx-peer.js';
import { rowsOf } from '../delivery/helpers.js';

// Port 25's direct path (SMTP_INBOUND_QUEUE=false: stored before the 250) screens and holds like
// the queued intake worker (test/screening/screening.test.ts): both write through InboundStore.

let server: TestServer;
let bob: Awaited<ReturnType<TestServer['createMailbox']>>;
const q = rowsOf(() => server);

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'smtp'],
    env: { SMTP_MX_PORT: '0', SMTP_SUBMISSION_PORT: '0', SMTP_INBOUND_QUEUE: 'false' },
  });
  const domain = await server.createDomain();
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
  const res = await server
    .api(domain.token)
    .put(`/api/domain/mailboxes/${bob.mailboxId}/policy`, { inboundScreening: { holdAtScore: 0.5 } });
  expect(res.status).toBe(200);
}, 180_000);
afterAll(() => server?.close());

describe('port 25 direct path', () => {
  it('stores the screening with the message and holds it at holdAtScore', async () => {
    const raw = [
      'From: Mail Admin <admin@paypa1.com>',
      `To: ${bob.address}`,
      'Subject: Account limited',
      'Message-ID: <direct-1@paypa1.com>',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Your account is limited. Reply with your password to restore it.',
      '',
    ].join('\r\n');
    await deliverToMx(server.runtime.smtpPorts.mx!, { from: 'admin@paypa1.com', to: bob.address }, raw);
    const [row] = await q`select id, screening, screening_held from message where mailbox_id = ${bob.mailboxId}`;
    const screening = typeof row.screening === 'string' ? JSON.parse(row.screening) : row.screening;
    expect(screening.signals).toEqual(expect.arrayContaining(['lookalikeDomain', 'credentialRequest']));
    expect(row.screening_held).toBe(true);
    expect((await server.api(bob.token).get('/api/messages')).body.data.items).toEqual([]);
    const held = await q`select 1 from mailbox_event where mailbox_id = ${bob.mailboxId} and type = 'message.received'`;
    expect(held).toHaveLength(0);
    // Held mail does not make its sender a known contact (new-recipients approval still applies).
    expect(await q`select 1 from mailbox_contact where mailbox_id = ${bob.mailboxId}`).toHaveLength(0);
  });
});
