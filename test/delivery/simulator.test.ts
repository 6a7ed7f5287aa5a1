import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { rowsOf, sendBody, twoMailboxes, waitFor } from './helpers.js';
import { mcpClient, ok } from '../mcp/helpers.js';

// docs/workflow.md, "Delivery simulator": simulator.invalid outcomes through the real delivery
// path (records, events, bounces, retries, metrics), with no external transport configured at all.

let server: TestServer;
const q = rowsOf(() => server);
const clients: Client[] = [];

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'worker'],
    env: { WORKER_POLL_INTERVAL: '50ms', DELIVERY_RETRY_BASE: '100ms', SMTP_DELIVERY: 'none' },
  });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.close();
});

const recipient = (messageId: string) =>
  q`select address, status, attempts, remote_reply from message_recipient where message_id = ${messageId}`.then(
    (r) => r[0],
  );
const settled = (messageId: string) =>
  waitFor(
    async () => {
      const [m] = await q`select delivery_status from message where id = ${messageId}`;
      return ['delivered', 'failed'].includes(m.delivery_status) && m.delivery_status;
    },
    15_000,
    'a final delivery status',
  );
const deliveryEvents = async (mailboxId: string, messageId: string) =>
  (
    await q`select payload from mailbox_event where mailbox_id = ${mailboxId} and type = 'message.delivery' order by seq`
  ).filter((e) => e.payload.data.messageId === messageId);

describe('delivery simulator (simulator.invalid)', () => {
  it('delivered@ is reported delivered', async () => {
    const { a } = await twoMailboxes(server);
    const sent = await server.api(a.token).post('/api/messages/send', sendBody('delivered@simulator.invalid'));
    expect(await settled(sent.body.data.messageId)).toBe('delivered');
    expect(await recipient(sent.body.data.messageId)).toMatchObject({ status: 'delivered', attempts: 1 });
    const detail = await server.api(a.token).get(`/api/messages/${sent.body.data.messageId}`);
    expect(detail.body.data.deliveryStatus).toBe('delivered');
    expect((await deliveryEvents(a.mailboxId, sent.body.data.messageId)).length).toBeGreaterThan(0);
  });

  it('bounce@ fails for good: a bounce in the sender mailbox and message.delivery with failed', async () => {
    const { a } = await twoMailboxes(server);
    const sent = await server
      .api(a.token)
      .post('/api/messages/send', sendBody('bounce@simulator.invalid', { subject: 'Will bounce' }));
    expect(await settled(sent.body.data.messageId)).toBe('failed');
    expect(await recipient(sent.body.data.messageId)).toMatchObject({ status: 'failed' });
    expect((await recipient(sent.body.data.messageId)).remote_reply).toMatch(/^550 5\.1\.1 /);
    const bounces = await waitFor(
      () =>
        q`select subject, body_text from message where mailbox_id = ${a.mailboxId} and direction = 'inbound'`.then(
          (r) => r.length > 0 && r,
        ),
      10_000,
      'the bounce',
    );
    expect(bounces[0].subject).toBe('Undelivered Mail Returned to Sender');
    expect(bounces[0].body_text).toContain('bounce@simulator.invalid');
    const events = await deliveryEvents(a.mailboxId, sent.body.data.messageId);
    expect(events.some((e) => e.payload.data.deliveryStatus === 'failed')).toBe(true);
  });

  it('defer@ is deferred once, then delivered on the retry', async () => {
    const { a } = await twoMailboxes(server);
    const sent = await server.api(a.token).post('/api/messages/send', sendBody('defer@simulator.invalid'));
    expect(await settled(sent.body.data.messageId)).toBe('delivered');
    expect(await recipient(sent.body.data.messageId)).toMatchObject({ status: 'delivered', attempts: 2 });
    const statuses = (await deliveryEvents(a.mailboxId, sent.body.data.messageId)).map(
      (e) => e.payload.data.deliveryStatus,
    );
    expect(statuses).toContain('deferred');
    expect(statuses[statuses.length - 1]).toBe('delivered');
  });

  it('suppressed@ is refused as suppressed; an unknown simulator address fails naming the known ones', async () => {
    const { a } = await twoMailboxes(server);
    const sent = await server
      .api(a.token)
      .post('/api/messages/send', sendBody(['suppressed@simulator.invalid', 'nobody@simulator.invalid']));
    expect(await settled(sent.body.data.messageId)).toBe('failed');
    const rows =
      await q`select address, status, remote_reply from message_recipient where message_id = ${sent.body.data.messageId} order by address`;
    expect(rows[0]).toMatchObject({ address: 'nobody@simulator.invalid', status: 'failed' });
    expect(rows[0].remote_reply).toMatch(/delivered@, bounce@, defer@ or suppressed@/);
    expect(rows[1]).toMatchObject({ address: 'suppressed@simulator.invalid', status: 'failed' });
    expect(rows[1].remote_reply).toMatch(/^550 5\.7\.1 .*suppressed/);
  });

  it('MCP send_mail reaches the simulator too, and the outcomes are counted in the delivery metric', async () => {
    const { a } = await twoMailboxes(server);
    const client = await mcpClient(server, a.token);
    clients.push(client);
    const sent = await ok(client, 'send_mail', {
      toAddress: 'delivered@simulator.invalid',
      subject: 'From the agent',
      bodyText: 'x',
    });
    expect(await settled(sent.messageId)).toBe('delivered');
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/route="simulator",result="delivered"|result="delivered",route="simulator"/);
  });
});
