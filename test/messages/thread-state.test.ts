import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock } from '../support/tenants.js';
import { mailboxTokenWith, rowsOf, sendBody, twoMailboxes, waitFor } from '../delivery/helpers.js';
import { subscribe, type Recorder } from '../realtime/client.js';
import { mcpClient, fails, ok } from '../mcp/helpers.js';
import { FollowUps } from '../../src/core/state/messages/follow-up.js';
import { sql } from '../../src/storage/database.js';

// docs/workflow.md, "Thread state" and "Follow-ups". Time moves with the injected clock; the
// worker's poll (50 ms here) is what the follow-up tests wait for, never the follow-up itself.

let clock: ManualClock;
let server: TestServer;
let hook: http.Server;
const hooked: any[] = [];
const clients: Client[] = [];
const recorders: Recorder[] = [];
const q = rowsOf(() => server);
const HOUR = 3_600_000;

beforeAll(async () => {
  clock = new ManualClock();
  server = await startTestServer({
    roles: ['api', 'worker', 'realtime'],
    clock,
    env: { WORKER_POLL_INTERVAL: '50ms', ALLOW_PRIVATE_NETWORK_TARGETS: 'true' },
  });
  hook = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hooked.push(JSON.parse(body));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  for (const r of recorders) r.socket.close();
  await Promise.all(clients.map((c) => c.close()));
  await server?.close();
  await new Promise((r) => hook?.close(r));
});

/** A received message answering `inReplyTo` (what local delivery or port 25 store). */
const answer = (mailboxId: string, inReplyTo: string, tag: string) =>
  server.runtime.services.inbound.store(undefined, {
    mailboxId,
    from: 'carol@peer.example',
    to: ['x@example.test'],
    subject: 'Re: Hello',
    bodyText: 'answer',
    bodyHtml: null,
    internetMessageId: `<answer-${tag}@peer.example>`,
    inReplyTo,
    references: [inReplyTo],
    receivedAt: clock.now(),
  });

async function sentThread(token: string) {
  const sent = await server.api(token).post('/api/messages/send', sendBody('carol@peer.example'));
  expect(sent.status).toBe(202);
  const [row] = await q`select internet_message_id from message where id = ${sent.body.data.messageId}`;
  return { ...sent.body.data, internetMessageId: row.internet_message_id as string };
}

const threadOf = async (token: string, threadId: string, query = '') =>
  ((await server.api(token).get(`/api/threads${query}`)).body.data.items as any[]).find((t) => t.threadId === threadId);

describe('thread state', () => {
  it('sending sets awaiting_reply, an answer sets open; GET /api/threads?state= lists by state', async () => {
    const { a } = await twoMailboxes(server);
    const sent = await sentThread(a.token);
    expect(await threadOf(a.token, sent.threadId, '?state=awaiting_reply')).toMatchObject({
      state: 'awaiting_reply',
      awaitingReplySinceTs: sent.queuedAtTs,
      followUpAtTs: null,
      mailboxAddress: a.address,
    });
    clock.advance(1000);
    const again = await server.api(a.token).post(`/api/messages/${sent.messageId}/reply`, { bodyText: 'Any news?' });
    expect(again.status).toBe(202);
    // Still waiting since the first unanswered send.
    expect((await threadOf(a.token, sent.threadId)).awaitingReplySinceTs).toBe(sent.queuedAtTs);
    await answer(a.mailboxId, sent.internetMessageId, 'open');
    expect(await threadOf(a.token, sent.threadId, '?state=awaiting_reply')).toBeUndefined();
    expect(await threadOf(a.token, sent.threadId, '?state=open')).toMatchObject({
      state: 'open',
      awaitingReplySinceTs: null,
    });
    const bad = await server.api(a.token).get('/api/threads?state=waiting');
    expect(bad.status).toBe(400);
  });

  it('pages like messages: limit, nextCursor, totalCount; a cursor of another filter is a 400', async () => {
    const { a } = await twoMailboxes(server);
    for (let i = 0; i < 3; i++) {
      clock.advance(10);
      await sentThread(a.token);
    }
    const first = await server.api(a.token).get('/api/threads?state=awaiting_reply&limit=2');
    expect(first.body.data).toMatchObject({ totalCount: 3 });
    expect(first.body.data.items).toHaveLength(2);
    const second = await server
      .api(a.token)
      .get(`/api/threads?state=awaiting_reply&limit=2&cursor=${first.body.data.nextCursor}`);
    expect(second.body.data.items).toHaveLength(1);
    expect(second.body.data.nextCursor).toBeNull();
    const ids = [...first.body.data.items, ...second.body.data.items].map((t: any) => t.threadId);
    expect(new Set(ids).size).toBe(3);
    const wrong = await server.api(a.token).get(`/api/threads?state=open&cursor=${first.body.data.nextCursor}`);
    expect(wrong.status).toBe(400);
    expect((await server.api(a.token).get('/api/threads?cursor=x.y')).status).toBe(400);
  });

  it('PUT /api/threads/{threadId}/state needs MailboxSend; domain tokens name the mailbox; others see 404', async () => {
    const { domain, a, b } = await twoMailboxes(server);
    const sent = await sentThread(a.token);
    const path = `/api/threads/${sent.threadId}/state`;
    const readOnly = await mailboxTokenWith(server, a.mailboxId, ['MailboxRead']);
    expect((await server.api(readOnly).put(path, { state: 'closed' })).status).toBe(403);
    expect((await server.api(b.token).put(path, { state: 'closed' })).status).toBe(404);
    expect((await server.api(domain.token).put(path, { state: 'closed' })).status).toBe(400);
    const other = await server.api(domain.token).put(path, { state: 'closed', mailboxAddress: b.address });
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject({ code: 400, errMsg: expect.stringMatching(/does not name the mailbox/) });
    const viaQuery = await server
      .api(domain.token)
      .put(`${path}?mailboxAddress=${encodeURIComponent(a.address)}`, { state: 'needs_human' });
    expect(viaQuery.status).toBe(200);
    expect(viaQuery.body.data).toMatchObject({ state: 'needs_human', awaitingReplySinceTs: null });
    const followUpAtTs = clock.now().getTime() + HOUR;
    const set = await server.api(a.token).put(path, { state: 'awaiting_reply', followUpAtTs });
    expect(set.body.data).toMatchObject({
      state: 'awaiting_reply',
      followUpAtTs,
      awaitingReplySinceTs: clock.now().getTime(),
    });
    expect((await server.api(a.token).put(path, { state: 'bogus' })).status).toBe(400);
    const kept = await server.api(a.token).put(path, { state: 'awaiting_reply' });
    expect(kept.body.data.followUpAtTs).toBe(followUpAtTs);
    const cleared = await server.api(a.token).put(path, { state: 'awaiting_reply', followUpAtTs: null });
    expect(cleared.body.data.followUpAtTs).toBeNull();
  });

  it('GET /api/threads/{threadId} carries the state, and a PUT makes its cached copy stale (thread.state-changed)', async () => {
    const { a } = await twoMailboxes(server);
    const sent = await sentThread(a.token);
    const first = await server.api(a.token).get(`/api/threads/${sent.threadId}`);
    expect(first.body.data).toMatchObject({
      state: 'awaiting_reply',
      awaitingReplySinceTs: sent.queuedAtTs,
      followUpAtTs: null,
    });
    const etag = first.headers.get('etag')!;
    expect(etag).toBeTruthy();
    await server.api(a.token).put(`/api/threads/${sent.threadId}/state`, { state: 'closed' });
    const again = await server.api(a.token).get(`/api/threads/${sent.threadId}`, { 'if-none-match': etag });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ state: 'closed', awaitingReplySinceTs: null });
    const [event] =
      await q`select payload from mailbox_event where mailbox_id = ${a.mailboxId} and type = 'thread.state-changed'`;
    expect(event.payload.data).toMatchObject({ threadId: sent.threadId, state: 'closed' });
  });

  it('thread.follow-up-due: once, on Socket.IO and webhooks, when followUpAt passes still awaiting_reply', async () => {
    const { domain, a } = await twoMailboxes(server);
    const registered = await server.api(domain.token).post('/api/domain/webhooks', {
      url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`,
      eventTypes: ['thread.follow-up-due'],
      mailboxAddresses: [a.address],
    });
    expect(registered.status).toBe(201);
    const rec = await subscribe(server.url, { auth: { token: a.token } });
    recorders.push(rec);
    const sent = await sentThread(a.token);
    const followUpAtTs = clock.now().getTime() + HOUR;
    await server.api(a.token).put(`/api/threads/${sent.threadId}/state`, { state: 'awaiting_reply', followUpAtTs });
    clock.advance(HOUR - 1000);
    await server.runtime.services.followUps.emitDue();
    expect(rec.events.filter((e) => e.type === 'thread.follow-up-due')).toHaveLength(0);
    clock.advance(1000);
    await rec.until(() => rec.events.some((e) => e.type === 'thread.follow-up-due'), 10_000, 'follow-up event');
    const event = rec.events.find((e) => e.type === 'thread.follow-up-due')!;
    expect(event).toMatchObject({
      mailboxId: a.mailboxId,
      mailboxAddress: a.address,
      data: { threadId: sent.threadId, state: 'awaiting_reply', followUpAtTs, awaitingReplySinceTs: sent.queuedAtTs },
    });
    await waitFor(async () => hooked.some((h) => h.eventId === event.eventId), 10_000, 'the webhook delivery');
    expect(hooked.find((h) => h.eventId === event.eventId)).toMatchObject({ type: 'thread.follow-up-due' });
    // Further sweeps emit nothing more for it.
    await server.runtime.services.followUps.emitDue();
    const logged =
      await q`select count(*)::int as n from mailbox_event where mailbox_id = ${a.mailboxId} and type = 'thread.follow-up-due'`;
    expect(logged[0].n).toBe(1);
    expect((await threadOf(a.token, sent.threadId)).followUpNotifiedAtTs).toBe(clock.now().getTime());
  });

  it('an answer before followUpAt cancels the follow-up', async () => {
    const { a } = await twoMailboxes(server);
    const sent = await sentThread(a.token);
    await server.api(a.token).put(`/api/threads/${sent.threadId}/state`, {
      state: 'awaiting_reply',
      followUpAtTs: clock.now().getTime() + HOUR,
    });
    await answer(a.mailboxId, sent.internetMessageId, 'cancel');
    clock.advance(2 * HOUR);
    await server.runtime.services.followUps.emitDue();
    const logged =
      await q`select count(*)::int as n from mailbox_event where mailbox_id = ${a.mailboxId} and type = 'thread.follow-up-due'`;
    expect(logged[0].n).toBe(0);
    expect(await threadOf(a.token, sent.threadId)).toMatchObject({ state: 'open', followUpAtTs: null });
  });

  it('MCP list_threads and set_thread_state', async () => {
    const { a } = await twoMailboxes(server);
    const sent = await sentThread(a.token);
    const client = await mcpClient(server, a.token);
    clients.push(client);
    const page = await ok(client, 'list_threads', { state: 'awaiting_reply' });
    expect(page.items.map((t: any) => t.threadId)).toContain(sent.threadId);
    const set = await ok(client, 'set_thread_state', { threadId: sent.threadId, state: 'closed' });
    expect(set).toMatchObject({ threadId: sent.threadId, state: 'closed', awaitingReplySinceTs: null });
    const closed = await ok(client, 'list_threads', { state: 'closed' });
    expect(closed.items.map((t: any) => t.threadId)).toEqual([sent.threadId]);
    expect(await fails(client, 'set_thread_state', { threadId: 'thr_unknown', state: 'open' })).toMatchObject({
      code: 404,
    });
  });
});

describe('follow-up emission across workers', () => {
  let apiOnly: TestServer;
  let still: ManualClock;
  beforeAll(async () => {
    still = new ManualClock();
    // No worker role: the follow-ups below are emitted only by the FollowUps instances the test makes.
    apiOnly = await startTestServer({ roles: ['api'], clock: still });
  });
  afterAll(async () => {
    await apiOnly?.close();
  });

  it('two workers sweeping at once emit a due follow-up exactly once; a worker started later finds nothing left', async () => {
    const { a } = await twoMailboxes(apiOnly);
    const s = apiOnly.runtime.services;
    const threads: string[] = [];
    for (let i = 0; i < 20; i++) {
      const sent = await apiOnly.api(a.token).post('/api/messages/send', sendBody('carol@peer.example'));
      threads.push(sent.body.data.threadId);
      await apiOnly.api(a.token).put(`/api/threads/${sent.body.data.threadId}/state`, {
        state: 'awaiting_reply',
        followUpAtTs: still.now().getTime() + 1000,
      });
    }
    still.advance(1000);
    // Not lost while no worker ran: still due, in the rows.
    const worker = () => new FollowUps(s.db, s.bus, still, s.log);
    const [x, y] = await Promise.all([worker().emitDue(), worker().emitDue()]);
    expect(x + y).toBe(20);
    expect(await worker().emitDue()).toBe(0);
    const rows = await s.db.rows(
      sql<{ thread_id: string }>`select payload->'data'->>'threadId' as thread_id from mailbox_event
        where mailbox_id = ${a.mailboxId} and type = 'thread.follow-up-due'`,
    );
    expect(rows.map((r) => r.thread_id).sort()).toEqual([...threads].sort());
  });
});
