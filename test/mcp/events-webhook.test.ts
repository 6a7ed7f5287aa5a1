import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import {
  createMCPClient,
  experimental_createMCPEventWebhook as createMCPEventWebhook,
  type MCPClient,
} from '@ai-sdk/mcp';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintToken } from '../support/tenants.js';

// Webhook subscriptions of the MCP events extension with a third-party 2026-07-28 client
// (@ai-sdk/mcp and its own webhook receiver, which verifies the Standard Webhooks signature, the
// X-MCP-Subscription-Id header and that eventId equals webhook-id). Delivered by the webhook
// worker; expiring with the lease; removed by unsubscribe and when the token stops being valid.

type Box = Awaited<ReturnType<TestServer['createMailbox']>>;
type Stored = Parameters<Parameters<typeof createMCPEventWebhook>[0]['store']['set']>[0];

let server: TestServer;
let domain: Awaited<ReturnType<TestServer['createDomain']>>;
let alice: Box;
let bob: Box;
let receiver: Server;
let hookUrl: string;
const store = new Map<string, Stored>();
const received: { subscriptionId: string; name: string; eventId: string; data: any }[] = [];

const eventStore = {
  get: async (key: string) => store.get(key),
  getById: async (id: string) => [...store.values()].find((s) => s.id === id),
  set: async (s: Stored) => void store.set(s.key, s),
  update: async (key: string, patch: Partial<Stored>) => void store.set(key, { ...store.get(key)!, ...patch }),
  delete: async (key: string) => void store.delete(key),
};

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'worker'],
    env: {
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      WORKER_POLL_INTERVAL: '100ms',
      WEBHOOK_RETRY_BASE: '100ms',
      WEBHOOK_RETRY_MAX: '400ms',
      SEND_RATE_LIMIT_PER_MINUTE: '1000',
    },
  });
  domain = await server.createDomain();
  alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
  const handle = createMCPEventWebhook({
    store: eventStore,
    onEvent: async ({ subscription, event }) => {
      received.push({ subscriptionId: subscription.id, name: event.name, eventId: event.eventId, data: event.data });
    },
  });
  receiver = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const answer = await handle(
      new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) }),
    );
    res.writeHead(answer.status).end(await answer.text());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await new Promise((r) => receiver?.close(r));
  await server?.close();
});

const client = (token: string): Promise<MCPClient> =>
  createMCPClient({
    transport: { type: 'http', url: `${server.url}/mcp`, headers: { authorization: `Bearer ${token}` } },
    experimental_events: { store: eventStore },
  });

const sendTo = async (from: Box, to: Box, subject: string) => {
  const res = await server
    .api(from.token)
    .post('/api/messages/send', { toAddress: to.address, subject, bodyText: 'Hi' });
  expect(res.status).toBe(202);
};

async function until<T>(check: () => T | undefined, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('not in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
const subjectsFor = (id: string) =>
  received.filter((r) => r.subscriptionId === id).map((r) => (r.data as { data: { subject?: string } }).data.subject);
const subscription = (id: string) =>
  sql<{ n: string }>`select count(*)::text as n from mcp_event_subscription where id = ${id}`
    .execute(server.runtime.services.db.db)
    .then((r) => Number(r.rows[0]!.n));

describe('events/subscribe with @ai-sdk/mcp', () => {
  it('speaks 2026-07-28, sees the events capability, lists the same tools', async () => {
    const ai = await client(bob.token);
    const tools = await ai.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('list_messages');
    const list = await ai.experimental_events.list();
    expect(list.events.find((e) => e.name === 'message.received')?.delivery).toEqual(['poll', 'push', 'webhook']);
    await ai.close();
  });

  it('delivers each new message once, signed, to the webhook; unsubscribe stops it', async () => {
    const ai = await client(bob.token);
    const sub = await ai.experimental_events.subscribe({
      name: 'message.received',
      arguments: {},
      delivery: { mode: 'webhook', url: hookUrl, allowInsecureLocalhost: true },
      ttlMs: 600_000,
    });
    expect(sub.id).toMatch(/^evs_/);
    expect(Date.parse(sub.refreshBefore!)).toBeGreaterThan(Date.now());
    await sendTo(alice, bob, 'Hook 1');
    await sendTo(alice, bob, 'Hook 2');
    await until(() => (subjectsFor(sub.id).length >= 2 ? true : undefined));
    // The worker delivers the two sends concurrently, so Bob may store either first; the webhook
    // follows Bob's event log (eventId `<mailboxId>_<sequence>`), once each.
    expect([...subjectsFor(sub.id)].sort()).toEqual(['Hook 1', 'Hook 2']);
    const sequences = received
      .filter((r) => r.subscriptionId === sub.id)
      .map((r) => Number(r.eventId.slice(r.eventId.lastIndexOf('_') + 1)));
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    const first = received.find((r) => r.subscriptionId === sub.id)!;
    expect(first.name).toBe('message.received');
    expect(first.data).toMatchObject({ type: 'message.received', mailboxAddress: bob.address });
    // A subscription is not one of the webhook routes' webhooks.
    const hooks = await server.api(domain.token).get('/api/domain/webhooks');
    expect(hooks.body.data.items).toEqual([]);
    // Refresh: the same key, a new lease, no second subscription.
    const again = await ai.experimental_events.refresh({ id: sub.id });
    expect(again.id).toBe(sub.id);
    await ai.experimental_events.unsubscribe({ id: sub.id });
    expect(await subscription(sub.id)).toBe(0);
    await sendTo(alice, bob, 'Hook 3');
    await new Promise((r) => setTimeout(r, 1500));
    expect(subjectsFor(sub.id)).toEqual(['Hook 1', 'Hook 2']);
    await ai.close();
  });

  it('a cursor replays what came after it; a lapsed lease or a revoked token removes the subscription', async () => {
    const minted = await mintToken(server, { kind: 'mailbox', domainId: domain.domainId, mailboxId: bob.mailboxId });
    const ai = await client(minted.token);
    const sub = await ai.experimental_events.subscribe({
      name: 'message.received',
      delivery: { mode: 'webhook', url: `${hookUrl}?replay=1`, allowInsecureLocalhost: true },
    });
    await sendTo(alice, bob, 'Before lapse');
    await until(() => (subjectsFor(sub.id).includes('Before lapse') ? true : undefined));
    // The lease runs out (as if the client stopped refreshing): the sweep removes it.
    await sql`update mcp_event_subscription set refresh_before = now() - interval '1 second' where id = ${sub.id}`.execute(
      server.runtime.services.db.db,
    );
    await server.runtime.services.eventSubscriptions.sweep();
    expect(await subscription(sub.id)).toBe(0);
    await sendTo(alice, bob, 'After lapse');
    await new Promise((r) => setTimeout(r, 1500));
    expect(subjectsFor(sub.id)).not.toContain('After lapse');
    // Resubscribing from the last cursor gets what came meanwhile, once.
    const stored = [...store.values()].find((s) => s.id === sub.id)!;
    const back = await ai.experimental_events.refresh({ key: stored.key });
    await until(() => (subjectsFor(back.id).includes('After lapse') ? true : undefined));
    expect(subjectsFor(back.id).filter((s) => s === 'After lapse')).toHaveLength(1);
    expect(subjectsFor(back.id)).not.toContain('Before lapse');
    // The token is disabled: the sweep removes the subscription.
    await sql`update access_token set disabled_at = now() where id = ${minted.tokenId}`.execute(
      server.runtime.services.db.db,
    );
    await server.runtime.services.eventSubscriptions.sweep();
    expect(await subscription(back.id)).toBe(0);
    await ai.close();
  }, 90_000);

  it("authorization is the tools': a domain token must name one of its mailboxes", async () => {
    const ai = await client(domain.token);
    await expect(
      ai.experimental_events.subscribe({
        name: 'message.received',
        delivery: { mode: 'webhook', url: hookUrl, allowInsecureLocalhost: true },
      }),
    ).rejects.toThrow();
    const named = await ai.experimental_events.subscribe({
      name: 'message.received',
      arguments: { mailboxAddress: bob.address },
      delivery: { mode: 'webhook', url: `${hookUrl}?domain=1`, allowInsecureLocalhost: true },
      ttlMs: 1000,
    });
    expect(named.id).toMatch(/^evs_/);
    // A lease shorter than the floor is granted the floor (one minute), a self-announcing clamp.
    expect(Date.parse(named.refreshBefore!) - Date.now()).toBeGreaterThan(50_000);
    await ai.experimental_events.unsubscribe({ id: named.id });
    await ai.close();
  });
});
