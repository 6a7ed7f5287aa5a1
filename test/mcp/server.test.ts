import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintToken, seedMessage } from '../support/tenants.js';
import { mcpClient } from './helpers.js';

// The MCP endpoint itself: bearer auth before any MCP exchange, stateless Streamable HTTP,
// the tool listing, and the inbox resource.

const TOOLS = [
  'list_messages',
  'get_message',
  'get_thread',
  'send_mail',
  'reply_message',
  'set_read_state',
  'delete_messages',
  'upload_attachment',
  'list_mailboxes',
  'wait_for_message',
  'cancel_scheduled_send',
  'create_draft',
  'list_drafts',
  'get_draft',
  'update_draft',
  'delete_draft',
  'send_draft',
];

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

let server: TestServer;
let domain: Awaited<ReturnType<TestServer['createDomain']>>;
let alice: Awaited<ReturnType<TestServer['createMailbox']>>;
let bob: Awaited<ReturnType<TestServer['createMailbox']>>;

beforeAll(async () => {
  server = await startTestServer({ env: { MCP_ALLOWED_ORIGINS: 'https://inspector.example' } });
  domain = await server.createDomain();
  alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
});
afterAll(async () => {
  await server?.close();
});

describe('authentication before any MCP exchange', () => {
  it.each([
    ['no Authorization header', undefined, 'Bearer realm="mailbox-service"'],
    ['a malformed token', 'Bearer nope', 'Bearer realm="mailbox-service", error="invalid_token"'],
    [
      'an unknown well-formed token',
      'Bearer mbxm_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA000000',
      'Bearer realm="mailbox-service", error="invalid_token"',
    ],
  ])('%s: HTTP 401 with WWW-Authenticate and the envelope', async (_name, authorization, challenge) => {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...mcpHeaders, ...(authorization ? { authorization } : {}) },
      body: JSON.stringify(initialize),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain(challenge);
    const body = await res.json();
    expect(body).toMatchObject({ code: 401, data: null, errMsg: expect.any(String) });
  });

  it('a disabled or expired token is a 401 too', async () => {
    const disabled = await mintToken(server, {
      kind: 'mailbox',
      domainId: domain.domainId,
      mailboxId: alice.mailboxId,
      disabled: true,
    });
    const expired = await mintToken(server, {
      kind: 'mailbox',
      domainId: domain.domainId,
      mailboxId: alice.mailboxId,
      expiresAt: new Date(Date.now() - 1000),
    });
    for (const { token } of [disabled, expired]) {
      const res = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { ...mcpHeaders, authorization: `Bearer ${token}` },
        body: JSON.stringify(initialize),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    }
  });

  it('the SDK client fails to connect without a valid token', async () => {
    const client = new Client({ name: 't', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
      requestInit: { headers: { authorization: 'Bearer nope' } },
    });
    await expect(client.connect(transport)).rejects.toThrow(/401|Unauthorized|invalid/i);
    const anonymous = new Client({ name: 't', version: '1' });
    await expect(anonymous.connect(new StreamableHTTPClientTransport(new URL('/mcp', server.url)))).rejects.toThrow();
  });
});

describe('Origin (DNS-rebinding defence, MCP Streamable HTTP security)', () => {
  const post = (origin: string) =>
    fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...mcpHeaders, origin, authorization: `Bearer ${alice.token}` },
      body: JSON.stringify(initialize),
    });

  it('a foreign Origin is 403 before anything else, even with a valid token', async () => {
    const res = await post('https://evil.example');
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: 403, data: null });
  });

  it("same-origin and listed origins pass, with CORS headers; a listed origin's preflight is answered", async () => {
    expect((await post(server.url)).status).toBe(200);
    const listed = await post('https://inspector.example');
    expect(listed.status).toBe(200);
    expect(listed.headers.get('access-control-allow-origin')).toBe('https://inspector.example');
    const preflight = await fetch(`${server.url}/mcp`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://inspector.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('POST');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    expect(
      (await fetch(`${server.url}/mcp`, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } })).status,
    ).toBe(403);
  });
});

describe('stateless Streamable HTTP', () => {
  it('answers initialize without a session id, and later requests need none', async () => {
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...mcpHeaders, authorization: `Bearer ${alice.token}` },
      body: JSON.stringify(initialize),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    expect(await res.text()).toContain('"serverInfo"');
    // A tools/list without any prior initialize on this "connection": any replica can answer it.
    const list = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...mcpHeaders, authorization: `Bearer ${alice.token}`, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(list.status).toBe(200);
    expect(await list.text()).toContain('"wait_for_message"');
  });

  it.each(['GET', 'DELETE'])('%s /mcp is 405 (no standalone stream, no session to end)', async (method) => {
    const res = await fetch(`${server.url}/mcp`, {
      method,
      headers: { accept: 'text/event-stream', authorization: `Bearer ${alice.token}` },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    const unauthenticated = await fetch(`${server.url}/mcp`, { method });
    expect(unauthenticated.status).toBe(401);
  });

  it('announces no list changes and no subscriptions: it has no stream to send them on', async () => {
    const client = await mcpClient(server, alice.token, { listTools: false });
    expect(client.getServerCapabilities()).toMatchObject({
      tools: { listChanged: false },
      resources: { listChanged: false, subscribe: false },
    });
    expect(client.getInstructions()).toContain('wait_for_message');
    await client.close();
  });

  it("two clients with different tokens never see each other's mailbox", async () => {
    const [a, b] = await Promise.all([mcpClient(server, alice.token), mcpClient(server, bob.token)]);
    const [pa, pb] = await Promise.all([
      a.callTool({ name: 'list_messages', arguments: {} }),
      b.callTool({ name: 'list_messages', arguments: { direction: 'inbound' } }),
    ]);
    expect((pa.structuredContent as any).totalCount).toBe(0);
    expect((pb.structuredContent as any).totalCount).toBe(0);
    await Promise.all([a.close(), b.close()]);
  });
});

describe('tools/list', () => {
  it('lists every tool with a description, an input schema and an output schema', async () => {
    const client = await mcpClient(server, alice.token, { listTools: false });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(TOOLS));
    for (const tool of tools) {
      expect(tool.description!.length, tool.name).toBeGreaterThan(80);
      expect(tool.inputSchema.type, tool.name).toBe('object');
      expect(tool.outputSchema?.type, tool.name).toBe('object');
      expect(tool.annotations, tool.name).toBeDefined();
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    // The core's limits, as the model sees them.
    expect(byName.list_messages!.inputSchema.properties!.limit).toMatchObject({
      minimum: 1,
      maximum: 200,
      default: 100,
    });
    expect(byName.list_messages!.inputSchema.properties!.direction).toMatchObject({ enum: ['inbound', 'outbound'] });
    expect(byName.send_mail!.inputSchema.required).toEqual(['toAddress']);
    expect(byName.send_mail!.inputSchema.properties).toHaveProperty('idempotencyKey');
    expect(byName.reply_message!.inputSchema.required).toEqual(['messageId']);
    expect(byName.set_read_state!.inputSchema.properties!.ids).toMatchObject({ minItems: 1, maxItems: 1000 });
    expect(byName.upload_attachment!.inputSchema.required).toEqual(
      expect.arrayContaining(['contentBase64', 'filename']),
    );
    expect(byName.upload_attachment!.description).toContain(
      String(server.runtime.services.config.MAX_ATTACHMENT_BYTES),
    );
    expect(byName.wait_for_message!.inputSchema.properties!.timeoutMs).toMatchObject({
      minimum: 0,
      maximum: 55_000,
      default: 30_000,
    });
    expect(byName.delete_messages!.annotations).toMatchObject({ destructiveHint: true });
    // A draft may be saved incomplete: nothing is required to create one; sending names the draft.
    expect(byName.create_draft!.inputSchema.required ?? []).toEqual([]);
    expect(byName.send_draft!.inputSchema.required).toEqual(['draftId']);
    expect(byName.send_draft!.inputSchema.properties).toHaveProperty('idempotencyKey');
    expect(byName.send_draft!.annotations).toMatchObject({ openWorldHint: true, readOnlyHint: false });
    expect(byName.delete_draft!.annotations).toMatchObject({ destructiveHint: true });
    expect(byName.cancel_scheduled_send!.inputSchema.required).toEqual(['messageId']);
    expect(byName.get_message!.annotations).toMatchObject({ readOnlyHint: true });
    await client.close();
  });

  it('an unknown tool is a JSON-RPC error', async () => {
    const client = await mcpClient(server, alice.token);
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool/);
    await client.close();
  });
});

describe('the inbox resource', () => {
  it("lists the token's own inbox and reads it in the list_messages shape", async () => {
    await seedMessage(server, alice, { subject: 'Resource me' });
    const client = await mcpClient(server, alice.token);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toContain('mailbox://{address}/inbox');
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual([`mailbox://${alice.address}/inbox`]);
    const read = await client.readResource({ uri: `mailbox://${alice.address}/inbox` });
    const page = JSON.parse((read.contents[0] as { text: string }).text);
    const http = await server.api(alice.token).get('/api/messages?limit=20&direction=inbound');
    expect(page).toEqual(http.body.data);
    expect(page.items[0].subject).toBe('Resource me');
    // Another mailbox's inbox: the same 400 as mailboxAddress naming another mailbox over HTTP.
    await expect(client.readResource({ uri: `mailbox://${bob.address}/inbox` })).rejects.toThrow(/own mailbox/);
    await client.close();
  });

  it("a domain token lists its domain's inboxes and reads one by address", async () => {
    const client = await mcpClient(server, domain.token);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(
      expect.arrayContaining([`mailbox://${alice.address}/inbox`, `mailbox://${bob.address}/inbox`]),
    );
    const read = await client.readResource({ uri: `mailbox://${encodeURIComponent(bob.address)}/inbox` });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ items: [], totalCount: 0 });
    await expect(client.readResource({ uri: 'mailbox://nobody@elsewhere.test/inbox' })).rejects.toMatchObject({
      code: -32002,
      data: { code: 404 },
    });
    await client.close();
  });
});
