import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintToken } from '../support/tenants.js';
import { fails, mcpClient, ok, sameError } from './helpers.js';

// wait_for_message and GET /api/messages/wait: one core long-poll. Mail arrives the real way:
// sent over HTTP by another hosted mailbox and delivered locally by the worker role.

type Box = Awaited<ReturnType<TestServer['createMailbox']>>;

let server: TestServer;
let domain: Awaited<ReturnType<TestServer['createDomain']>>;
let alice: Box;
let bob: Box;
let carol: Box;
let bobMcp: Client;

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'worker'],
    env: { SEND_RATE_LIMIT_PER_MINUTE: '1000', MCP_PROGRESS_INTERVAL: '1s' },
  });
  domain = await server.createDomain();
  alice = await server.createMailbox(domain.token, `alice@${domain.name}`, 'Alice');
  bob = await server.createMailbox(domain.token, `bob@${domain.name}`, 'Bob');
  carol = await server.createMailbox(domain.token, `carol@${domain.name}`, 'Carol Sender');
  bobMcp = await mcpClient(server, bob.token);
});
afterAll(async () => {
  await bobMcp?.close();
  await server?.close();
});

const http = (token: string) => server.api(token);
const sendTo = async (from: Box, to: Box, subject: string) => {
  const res = await http(from.token).post('/api/messages/send', {
    toAddress: to.address,
    subject,
    bodyText: `Body of ${subject}`,
  });
  expect(res.status).toBe(202);
  return res.body.data as { messageId: string };
};
/** The current position of a mailbox's event log: a wait with timeoutMs 0 only looks once. */
const now = async (client: Client = bobMcp, args: Record<string, unknown> = {}) =>
  (await ok(client, 'wait_for_message', { timeoutMs: 0, ...args })).eventId as string;
/** The inbound copy (in `box`) of a message whose subject is unique. */
const inboundSummary = async (box: Box, subject: string) =>
  ((await http(box.token).get('/api/messages?direction=inbound&limit=200')).body.data.items as any[]).find(
    (m) => m.subject === subject,
  );

describe('wait_for_message', () => {
  it('returns as soon as a matching message arrives, as the summary list_messages shows', async () => {
    const since = await now();
    const started = Date.now();
    const waiting = ok(bobMcp, 'wait_for_message', { sinceEventId: since, timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 200));
    await sendTo(alice, bob, 'Welcome aboard');
    const res = await waiting;
    // Woken by the event bus, not by the 5 s fallback poll.
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(res).toMatchObject({ timedOut: false, eventId: expect.stringMatching(/^\d+$/) });
    expect(Number(res.eventId)).toBeGreaterThan(Number(since));
    expect(res.message).toEqual(await inboundSummary(bob, 'Welcome aboard'));
    expect(res.message).toMatchObject({
      direction: 'inbound',
      fromAddress: alice.address,
      mailboxAddress: bob.address,
      isRead: false,
    });
  });

  it('without sinceEventId, counts only mail arriving after the call', async () => {
    await sendTo(alice, bob, 'Old news');
    await waitUntilArrived(bob, 'Old news');
    const waiting = ok(bobMcp, 'wait_for_message', { timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 300));
    await sendTo(alice, bob, 'Fresh news');
    expect((await waiting).message.subject).toBe('Fresh news');
  });

  it('times out cleanly with message null and the position to continue from', async () => {
    const since = await now();
    const started = Date.now();
    const res = await ok(bobMcp, 'wait_for_message', {
      sinceEventId: since,
      timeoutMs: 300,
      subjectContains: 'never sent',
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(res).toEqual({ message: null, eventId: since, timedOut: true, warning: null });
  });

  it('honours from, subjectContains and direction, and steps through matches with sinceEventId', async () => {
    const since = await now();
    await sendTo(alice, bob, 'Weekly newsletter');
    await sendTo(carol, bob, 'Your verification CODE 111111');
    await sendTo(alice, bob, 'Your verification code 222222');
    await waitUntilArrived(bob, 'Your verification code 222222');

    // Already in the log after `since`: answered at once, oldest match first.
    const first = await ok(bobMcp, 'wait_for_message', {
      sinceEventId: since,
      subjectContains: 'verification code',
      timeoutMs: 5_000,
    });
    expect(first.message.subject).toBe('Your verification CODE 111111');
    const second = await ok(bobMcp, 'wait_for_message', {
      sinceEventId: first.eventId,
      subjectContains: 'verification code',
      timeoutMs: 5_000,
    });
    expect(second.message.subject).toBe('Your verification code 222222');
    const none = await ok(bobMcp, 'wait_for_message', {
      sinceEventId: second.eventId,
      subjectContains: 'verification code',
      timeoutMs: 100,
    });
    expect(none).toMatchObject({ message: null, timedOut: true });
    expect(Number(none.eventId)).toBeGreaterThanOrEqual(Number(second.eventId));

    // from matches a whole address (case-insensitively) or a domain; never the sender's name.
    expect(
      (
        await ok(bobMcp, 'wait_for_message', {
          sinceEventId: since,
          from: carol.address.toUpperCase(),
          timeoutMs: 1_000,
        })
      ).message.fromAddress,
    ).toBe(carol.address);
    expect((await fails(bobMcp, 'wait_for_message', { sinceEventId: since, from: 'carol sender' })).code).toBe(400);
    expect(
      (
        await ok(bobMcp, 'wait_for_message', {
          sinceEventId: since,
          from: alice.address,
          subjectContains: 'code',
          timeoutMs: 1_000,
        })
      ).message.subject,
    ).toBe('Your verification code 222222');

    // direction outbound: what this mailbox sent.
    const aliceMcp = await mcpClient(server, alice.token);
    const aliceSince = await now(aliceMcp, { direction: 'outbound' });
    const sent = await sendTo(alice, carol, 'Outbound one');
    const out = await ok(aliceMcp, 'wait_for_message', {
      direction: 'outbound',
      sinceEventId: aliceSince,
      timeoutMs: 5_000,
    });
    expect(out.message).toMatchObject({ messageId: sent.messageId, direction: 'outbound', subject: 'Outbound one' });
    await aliceMcp.close();
  });

  it('skips a message deleted before the wait saw it', async () => {
    const since = await now();
    await sendTo(alice, bob, 'Deleted before read');
    const copy = await waitUntilArrived(bob, 'Deleted before read');
    await http(bob.token).delete(`/api/messages/${copy.messageId}`);
    const res = await ok(bobMcp, 'wait_for_message', {
      sinceEventId: since,
      subjectContains: 'Deleted before read',
      timeoutMs: 200,
    });
    expect(res).toMatchObject({ message: null, timedOut: true });
  });

  it('errors: the same code and errMsg as GET /api/messages/wait', async () => {
    const head = Number(await now());
    const cases: Array<[Record<string, unknown>, string, number]> = [
      [{ sinceEventId: 'abc' }, 'sinceEventId=abc', 400],
      [{ sinceEventId: String(head + 1000) }, `sinceEventId=${head + 1000}`, 400],
      [{ timeoutMs: 60_000 }, 'timeoutMs=60000', 400],
      [{ timeoutMs: -1 }, 'timeoutMs=-1', 400],
      [{ direction: 'both' }, 'direction=both', 400],
      [{ mailboxAddress: alice.address }, `mailboxAddress=${alice.address}`, 400],
    ];
    for (const [args, query, code] of cases) {
      const mcp = await fails(bobMcp, 'wait_for_message', { timeoutMs: 0, ...args });
      expect(mcp.code, query).toBe(code);
      const withTimeout = query.startsWith('timeoutMs=') ? query : `timeoutMs=0&${query}`;
      sameError(await http(bob.token).get(`/api/messages/wait?${withTimeout}`), mcp);
    }
  });

  it('domain token: mailboxAddress required (400), foreign mailbox 404; missing MailboxRead 403', async () => {
    const domainMcp = await mcpClient(server, domain.token);
    sameError(
      await http(domain.token).get('/api/messages/wait?timeoutMs=0'),
      await fails(domainMcp, 'wait_for_message', { timeoutMs: 0 }),
    );
    expect((await fails(domainMcp, 'wait_for_message', { timeoutMs: 0 })).code).toBe(400);
    expect((await ok(domainMcp, 'wait_for_message', { timeoutMs: 0, mailboxAddress: bob.address })).timedOut).toBe(
      true,
    );
    const other = await server.createDomain();
    const otherMcp = await mcpClient(server, other.token);
    expect((await fails(otherMcp, 'wait_for_message', { timeoutMs: 0, mailboxAddress: bob.address })).code).toBe(404);
    const { token } = await mintToken(server, {
      kind: 'mailbox',
      domainId: domain.domainId,
      mailboxId: bob.mailboxId,
      scopes: ['MailboxSend'],
    });
    const sender = await mcpClient(server, token);
    const err = await fails(sender, 'wait_for_message', { timeoutMs: 0 });
    expect(err.code).toBe(403);
    sameError(await http(token).get('/api/messages/wait?timeoutMs=0'), err);
    await Promise.all([domainMcp.close(), otherMcp.close(), sender.close()]);
  });
});

describe('GET /api/messages/wait', () => {
  it('is not captured by GET /api/messages/:messageId', async () => {
    const res = await http(bob.token).get('/api/messages/wait?timeoutMs=0');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ message: null, timedOut: true, eventId: expect.stringMatching(/^\d+$/) });
  });

  it('long-polls until the message arrives and answers what the MCP tool answers', async () => {
    const since = (await http(bob.token).get('/api/messages/wait?timeoutMs=0')).body.data.eventId;
    const started = Date.now();
    const waiting = http(bob.token).get(
      `/api/messages/wait?sinceEventId=${since}&from=${alice.address}&subjectContains=invoice&timeoutMs=20000`,
    );
    await new Promise((r) => setTimeout(r, 200));
    await sendTo(carol, bob, 'Invoice from carol');
    await sendTo(alice, bob, 'Invoice from alice');
    const res = await waiting;
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(res.status).toBe(200);
    expect(res.body.data.message).toEqual(await inboundSummary(bob, 'Invoice from alice'));
    expect(res.body.data).toEqual(
      await ok(bobMcp, 'wait_for_message', {
        sinceEventId: since,
        from: alice.address,
        subjectContains: 'invoice',
        timeoutMs: 1_000,
      }),
    );
  });

  it('times out with 200 and timedOut true', async () => {
    const res = await http(bob.token).get('/api/messages/wait?timeoutMs=150&subjectContains=nothing');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ message: null, timedOut: true });
  });

  it('stops waiting (and unsubscribes) when the client goes away', async () => {
    const waits = countWaiters();
    const controller = new AbortController();
    const request = fetch(`${server.url}/api/messages/wait?timeoutMs=20000`, {
      headers: { authorization: `Bearer ${bob.token}` },
      signal: controller.signal,
    });
    await until(() => waits.active === 1);
    controller.abort();
    await expect(request).rejects.toThrow();
    await until(() => waits.active === 0);
    waits.restore();
    // The server is still fine and answers the next long-poll normally.
    expect((await http(bob.token).get('/api/messages/wait?timeoutMs=0')).status).toBe(200);
  });
});

describe('progress while waiting', () => {
  // The one server-to-client message stateless MCP can carry: notifications on the response
  // stream of the call in flight. Sent every 10 s when the client passed a progressToken.
  it('sends progress notifications with the timeout as total', async () => {
    const progress: Array<{ progress: number; total?: number }> = [];
    const res = await bobMcp.callTool(
      { name: 'wait_for_message', arguments: { timeoutMs: 1_400, subjectContains: 'never sent' } },
      undefined,
      { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true },
    );
    expect(res.structuredContent).toMatchObject({ message: null, timedOut: true });
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0]).toMatchObject({ total: 1_400 });
    expect(progress[0]!.progress).toBeGreaterThanOrEqual(900); // MCP_PROGRESS_INTERVAL is 1 s here
  });
});

describe('ending wait_for_message early', () => {
  // Stateless MCP: a notifications/cancelled arrives as a separate POST (possibly at another
  // replica) with no session linking it to the call, so it cannot reach the wait; closing the
  // connection does, and the 55 s cap bounds the rest.
  it('closing the client connection ends the wait in the core', async () => {
    const client = await mcpClient(server, bob.token);
    const waits = countWaiters();
    const call = client.callTool({ name: 'wait_for_message', arguments: { timeoutMs: 20_000 } });
    await until(() => waits.active === 1);
    await client.close();
    await expect(call).rejects.toThrow();
    await until(() => waits.active === 0);
    waits.restore();
  });
});

/** Counts live bus subscriptions (each waiting long-poll holds one). */
function countWaiters() {
  const bus = server.runtime.services.bus;
  const original = bus.subscribe;
  const counter = {
    active: 0,
    restore: () => {
      bus.subscribe = original;
    },
  };
  bus.subscribe = (listener) => {
    counter.active++;
    const off = original.call(bus, listener);
    return () => {
      counter.active--;
      off();
    };
  };
  return counter;
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Polls until the worker delivered `subject` into `box` (setup for tests that need mail present). */
async function waitUntilArrived(box: Box, subject: string): Promise<{ messageId: string }> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = await inboundSummary(box, subject);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`${subject} never arrived`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
