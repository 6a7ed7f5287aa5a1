import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { sendBody, twoMailboxes } from '../delivery/helpers.js';
import { mcpClient, ok } from '../mcp/helpers.js';

// The audit trail in words (docs/console.md): each entry carries the message's subject and
// recipients and the acting token's name, and a page can be narrowed by decision and channel.

let server: TestServer;
let world: Awaited<ReturnType<typeof twoMailboxes>>;

beforeAll(async () => {
  server = await startTestServer({ roles: ['api'] });
  world = await twoMailboxes(server);
  const policy = await server
    .api(world.domain.token)
    .put(`/api/domain/mailboxes/${world.a.mailboxId}/policy`, { approval: 'all' });
  expect(policy.status, JSON.stringify(policy.body)).toBe(200);
}, 180_000);
afterAll(() => server?.close());

const audit = (query = '') => server.api(world.a.token).get(`/api/mailbox/audit${query}`);

describe('audit trail in words', () => {
  it('names subject, recipients and token; filters by decision and channel', async () => {
    const sent = await server
      .api(world.a.token)
      .post(
        '/api/messages/send',
        sendBody(world.b.address, { subject: 'Quarterly figures', ccAddresses: ['cc@remote.example'] }),
      );
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const client = await mcpClient(server, world.a.token);
    try {
      await ok(client, 'send_mail', sendBody(world.b.address, { subject: 'Over MCP' }));
    } finally {
      await client.close();
    }
    const tokens = (await server.api(world.a.token).get('/api/mailbox/access-tokens')).body.data;
    const own = (Array.isArray(tokens) ? tokens : tokens.items).find((x: any) => x.tokenId === world.a.tokenId);

    const all = await audit();
    expect(all.status).toBe(200);
    const entry = all.body.data.items.find((e: any) => e.messageId === sent.body.data.messageId);
    expect(entry).toMatchObject({
      decision: 'held',
      channel: 'http',
      subject: 'Quarterly figures',
      recipients: [world.b.address, 'cc@remote.example'],
      tokenId: world.a.tokenId,
      tokenName: own.tokenName,
    });
    expect(typeof entry.tokenName).toBe('string');

    const viaMcp = (await audit('?channel=mcp')).body.data.items;
    expect(viaMcp.map((e: any) => e.subject)).toEqual(['Over MCP']);
    const held = (await audit('?decision=held&channel=http')).body.data.items;
    expect(held.map((e: any) => e.subject)).toEqual(['Quarterly figures']);
    expect((await audit('?decision=approved')).body.data.items).toEqual([]);
    const bad = await audit('?decision=maybe');
    expect(bad.status).toBe(400);
    expect(bad.body.errMsg).toMatch(/^decision: /);
  });
});
