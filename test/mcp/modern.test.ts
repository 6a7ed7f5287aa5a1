import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from 'kysely';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mcpClient } from './helpers.js';
import { mintToken } from '../support/tenants.js';
import { openEventStream } from './event-stream.js';

// /mcp on revision 2026-07-28 with the official v2 client, against a real server: the same tools,
// results and errors as 2025-11-25 (which the v1 tests in this directory cover), the stateless
// envelope, cache hints, and the events extension (events/list, events/poll, events/stream) read
// from the durable event log.

type Box = Awaited<ReturnType<TestServer['createMailbox']>>;
const MODERN = '2026-07-28';

let server: TestServer;
let domain: Awaited<ReturnType<TestServer['createDomain']>>;
let alice: Box;
let bob: Box;

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'worker'],
    // A short heartbeat, so a revoked token's stream ends within a second instead of 15 s.
    env: { SEND_RATE_LIMIT_PER_MINUTE: '1000', MCP_EVENTS_HEARTBEAT: '1s' },
  });
  domain = await server.createDomain();
  alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
});
afterAll(async () => {
  await server?.close();
});

async function modernClient(token: string): Promise<Client> {
  const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

const sendTo = async (from: Box, to: Box, subject: string) => {
  const res = await server
    .api(from.token)
    .post('/api/messages/send', { toAddress: to.address, subject, bodyText: 'Hi' });
  expect(res.status).toBe(202);
  return res.body.data as { messageId: string };
};

/** A raw 2026-07-28 request: the envelope in `_meta`, the routing headers beside it. */
const raw = (token: string, method: string, params: Record<string, unknown> = {}, version = MODERN, name?: string) =>
  fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': version,
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': version,
          'io.modelcontextprotocol/clientCapabilities': {},
          ...(params._meta as object),
        },
      },
    }),
  });

const PollResult = z.looseObject({
  events: z.array(
    z.looseObject({ eventId: z.string(), name: z.string(), timestamp: z.string(), data: z.any(), cursor: z.string() }),
  ),
  cursor: z.string(),
  truncated: z.boolean(),
  hasMore: z.boolean(),
  nextPollMs: z.number(),
});
const poll = (client: Client, params: Record<string, unknown>) =>
  client.request({ method: 'events/poll', params }, PollResult);

describe('2026-07-28 with the official v2 client', () => {
  it('negotiates 2026-07-28 without a session, and lists the same tools as 2025-11-25, each with all four hints', async () => {
    const modern = await modernClient(bob.token);
    expect(modern.getNegotiatedProtocolVersion()).toBe(MODERN);
    const legacy = await mcpClient(server, bob.token, { listTools: false });
    const [m, l] = await Promise.all([modern.listTools(), legacy.listTools()]);
    expect(m.tools.map((t) => t.name)).toEqual(l.tools.map((t) => t.name));
    for (const tool of m.tools) {
      const legacyTool = l.tools.find((t) => t.name === tool.name)!;
      expect(tool.inputSchema).toEqual(legacyTool.inputSchema);
      expect(tool.annotations).toEqual(legacyTool.annotations);
      for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'])
        expect(typeof (tool.annotations as Record<string, unknown>)[hint], `${tool.name} ${hint}`).toBe('boolean');
    }
    await Promise.all([modern.close(), legacy.close()]);
  });

  it('a tool result and a tool error are the same on both revisions', async () => {
    const modern = await modernClient(bob.token);
    const legacy = await mcpClient(server, bob.token);
    const args = { limit: 5 };
    const [m, l] = await Promise.all([
      modern.callTool({ name: 'list_messages', arguments: args }),
      legacy.callTool({ name: 'list_messages', arguments: args }),
    ]);
    expect(m.structuredContent).toEqual(l.structuredContent);
    const bad = { messageId: 'msg_nope' };
    const [me, le] = await Promise.all([
      modern.callTool({ name: 'get_message', arguments: bad }),
      legacy.callTool({ name: 'get_message', arguments: bad }),
    ]);
    expect(me.isError).toBe(true);
    expect(me.content).toEqual(le.content);
    expect(JSON.parse((me.content as { text: string }[])[0]!.text)).toMatchObject({ code: 404 });
    await Promise.all([modern.close(), legacy.close()]);
  });

  it('any request stands alone: no initialize, no Mcp-Session-Id; cache hints say what may be kept', async () => {
    const discover = await raw(bob.token, 'server/discover');
    expect(discover.status).toBe(200);
    expect(discover.headers.get('mcp-session-id')).toBeNull();
    const d = ((await discover.json()) as any).result;
    expect(d.supportedVersions).toContain(MODERN);
    expect(d.capabilities.extensions).toHaveProperty(['io.modelcontextprotocol/events']);
    expect(d.capabilities.events).toBeDefined();
    const tools = ((await (await raw(bob.token, 'tools/list')).json()) as any).result;
    // The same for every caller until the next deploy.
    expect(tools).toMatchObject({ ttlMs: 3_600_000, cacheScope: 'public' });
    // An inbox changes with the mailbox: not to be kept, and only for this caller.
    const read = (
      (await (
        await raw(
          bob.token,
          'resources/read',
          { uri: `mailbox://${bob.address}/inbox` },
          MODERN,
          `mailbox://${bob.address}/inbox`,
        )
      ).json()) as any
    ).result;
    expect(read).toMatchObject({ ttlMs: 0, cacheScope: 'private' });
  });

  it('a revision the server does not speak is HTTP 400 with -32022 naming the supported ones', async () => {
    const res = await raw(bob.token, 'tools/list', {}, '2099-01-01');
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe(-32022);
    expect(body.error.data.supported).toContain(MODERN);
  });

  it('a bad token is still an HTTP 401 before any MCP exchange', async () => {
    const res = await raw('mbxm_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA000000', 'tools/list');
    expect(res.status).toBe(401);
  });
});

describe('events extension', () => {
  it('events/list names the event types, each with { mailboxAddress? } and the real-time payload', async () => {
    const client = await modernClient(bob.token);
    const list = await client.request(
      { method: 'events/list', params: {} },
      z.looseObject({ events: z.array(z.any()) }),
    );
    const names = list.events.map((e: { name: string }) => e.name);
    for (const name of ['message.received', 'message.sent', 'message.delivery', 'message.approval-required'])
      expect(names).toContain(name);
    const received = list.events.find((e: { name: string }) => e.name === 'message.received');
    expect(Object.keys(received.inputSchema.properties)).toEqual(['mailboxAddress']);
    expect(received.inputSchema.additionalProperties).toBe(false);
    expect(received.payloadSchema.required).toEqual(
      expect.arrayContaining(['eventId', 'type', 'mailboxId', 'mailboxAddress', 'occurredAtTs', 'data']),
    );
    await client.close();
  });

  it('events/poll: a null cursor starts now; later polls return each event once, in order, with maxEvents and hasMore', async () => {
    const client = await modernClient(bob.token);
    const start = await poll(client, { name: 'message.received', cursor: null });
    expect(start.events).toEqual([]);
    for (const n of [1, 2, 3]) await sendTo(alice, bob, `Poll ${n}`);
    const seen: string[] = [];
    let cursor = start.cursor;
    const deadline = Date.now() + 20_000;
    while (seen.length < 3 && Date.now() < deadline) {
      const page = await poll(client, { name: 'message.received', cursor, maxEvents: 2 });
      expect(page.events.length).toBeLessThanOrEqual(2);
      for (const e of page.events) {
        expect(e.name).toBe('message.received');
        expect(e.data).toMatchObject({ type: 'message.received', mailboxAddress: bob.address });
        seen.push(e.data.data.subject ?? e.data.data.messageId);
      }
      cursor = page.cursor;
      if (!page.hasMore) await new Promise((r) => setTimeout(r, 200));
    }
    expect(seen).toHaveLength(3);
    expect(new Set(seen).size).toBe(3);
    const after = await poll(client, { name: 'message.received', cursor });
    expect(after.events).toEqual([]);
    await client.close();
  });

  it("authorization is the tools': a domain token must name a mailbox; another domain's is refused; a bad cursor is invalid", async () => {
    const client = await modernClient(domain.token);
    await expect(poll(client, { name: 'message.received', cursor: null })).rejects.toMatchObject({ code: -32602 });
    const ok = await poll(client, {
      name: 'message.received',
      cursor: null,
      arguments: { mailboxAddress: bob.address },
    });
    expect(ok.cursor).toMatch(/^ev1\./);
    const other = await server.createDomain();
    const stranger = await modernClient(other.token);
    await expect(
      poll(stranger, { name: 'message.received', cursor: null, arguments: { mailboxAddress: bob.address } }),
    ).rejects.toMatchObject({ code: expect.any(Number) });
    // bob's cursor read as alice's position is refused, not misread.
    const aliceClient = await modernClient(alice.token);
    await expect(poll(aliceClient, { name: 'message.received', cursor: ok.cursor })).rejects.toMatchObject({
      code: -32602,
    });
    await expect(poll(aliceClient, { name: 'no.such', cursor: null })).rejects.toMatchObject({ code: -32011 });
    await expect(
      poll(aliceClient, { name: 'message.received', cursor: null, arguments: { folder: 'x' } }),
    ).rejects.toMatchObject({ code: -32602 });
    await Promise.all([client.close(), stranger.close(), aliceClient.close()]);
  });

  it('events/poll says truncated when retention removed events after the cursor, and continues with what is kept', async () => {
    const client = await modernClient(bob.token);
    const start = await poll(client, { name: 'message.received', cursor: null });
    await sendTo(alice, bob, 'Lost to retention');
    await sendTo(alice, bob, 'Kept');
    // Retention removes the oldest events of the mailbox (as the sweeper does by age).
    await waitFor(
      async () => (await poll(client, { name: 'message.received', cursor: start.cursor })).events.length === 2,
    );
    const received = (await poll(client, { name: 'message.received', cursor: start.cursor })).events;
    await sql`delete from mailbox_event where mailbox_id = ${bob.mailboxId} and seq <= ${Number(received[0]!.data.eventId)}`.execute(
      server.runtime.services.db.db,
    );
    const page = await poll(client, { name: 'message.received', cursor: start.cursor });
    expect(page.truncated).toBe(true);
    expect(page.events.map((e) => e.data.eventId)).toEqual([received[1]!.data.eventId]);
    await client.close();
  });

  it('events/stream pushes each new occurrence once, resumes from a cursor with no gap and no duplicate', async () => {
    const first = await openEventStream(server.url, bob.token, { name: 'message.received', cursor: null });
    const active = await first.next();
    expect(active.method).toBe('notifications/events/active');
    expect(active.params.truncated).toBe(false);
    await sendTo(alice, bob, 'Push 1');
    const one = await first.next();
    expect(one.method).toBe('notifications/events/event');
    expect(one.params).toMatchObject({ name: 'message.received', data: { type: 'message.received' } });
    expect(one.params._meta['io.modelcontextprotocol/subscriptionId']).toBe(7);
    first.close();
    // While no stream is held, two more arrive; a stream from the last cursor gets exactly those.
    await sendTo(alice, bob, 'Push 2');
    await sendTo(alice, bob, 'Push 3');
    const again = await openEventStream(server.url, bob.token, { name: 'message.received', cursor: one.params.cursor });
    expect((await again.next()).method).toBe('notifications/events/active');
    const ids = [(await again.next()).params, (await again.next()).params].map((p) => Number(p.data.eventId));
    expect(ids[0]).toBeGreaterThan(Number(one.params.data.eventId));
    expect(ids[1]).toBeGreaterThan(ids[0]!);
    await sendTo(alice, bob, 'Push 4');
    const four = await again.next();
    expect(Number(four.params.data.eventId)).toBeGreaterThan(ids[1]!);
    again.close();
  });
});

describe('a held stream and its token', () => {
  it('one token holds at most MAX_EVENT_STREAMS_PER_TOKEN streams: beyond, -32013 TOO_MANY_EVENT_STREAMS; a closed one frees its slot', async () => {
    const minted = await mintToken(server, { kind: 'mailbox', domainId: domain.domainId, mailboxId: bob.mailboxId });
    const cap = server.runtime.services.config.MAX_EVENT_STREAMS_PER_TOKEN;
    const held = [];
    for (let i = 0; i < cap; i++) {
      const s = await openEventStream(server.url, minted.token, { name: 'message.received', cursor: null });
      expect((await s.next()).method).toBe('notifications/events/active');
      held.push(s);
    }
    const refusedBody = async () => {
      const res = await raw(minted.token, 'events/stream', { name: 'message.received', cursor: null });
      return res.text();
    };
    const refused = await refusedBody();
    expect(refused).toContain('-32013');
    expect(refused).toContain('TOO_MANY_EVENT_STREAMS');
    // Another token of the same mailbox is not affected.
    const other = await openEventStream(server.url, bob.token, { name: 'message.received', cursor: null });
    expect((await other.next()).method).toBe('notifications/events/active');
    other.close();
    held.pop()!.close();
    await waitFor(async () => server.runtime.services.caps.eventStreams.inUse(minted.tokenId) < cap);
    const again = await openEventStream(server.url, minted.token, { name: 'message.received', cursor: null });
    expect((await again.next()).method).toBe('notifications/events/active');
    for (const s of [...held, again]) s.close();
  });

  it('ends with notifications/events/terminated once the token is no longer valid (checked at the heartbeat)', async () => {
    const minted = await mintToken(server, { kind: 'mailbox', domainId: domain.domainId, mailboxId: bob.mailboxId });
    const stream = await openEventStream(server.url, minted.token, { name: 'message.received', cursor: null });
    expect((await stream.next()).method).toBe('notifications/events/active');
    await sql`update access_token set disabled_at = now() where id = ${minted.tokenId}`.execute(
      server.runtime.services.db.db,
    );
    const end = await stream.next(); // within one heartbeat (MCP_EVENTS_HEARTBEAT)
    expect(end.method).toBe('notifications/events/terminated');
    expect(end.params.error.code).toBe(-32012);
    stream.close();
  });
});

async function waitFor(check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}
