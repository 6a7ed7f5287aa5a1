import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import {
  eventsOf,
  mintMailboxToken,
  seedMany,
  seedMessage,
  twoTenants,
  type Seeded,
  type Tenants,
} from '../support/seed-messages.js';
import type { MailboxEvent } from '../../src/types/mailbox-event.js';

let server: TestServer;
let t: Tenants;
let msgs: Seeded[];
let a2msg: Seeded;
let b1msg: Seeded;
let deleted: Seeded;
beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
  msgs = await seedMany(server, 6, { mailboxId: t.a1.mailboxId });
  deleted = await seedMessage(server, { mailboxId: t.a1.mailboxId, deletedAt: new Date() });
  a2msg = await seedMessage(server, { mailboxId: t.a2.mailboxId });
  b1msg = await seedMessage(server, { mailboxId: t.b1.mailboxId });
});
afterAll(async () => {
  await server?.close();
});

const put = (token: string, id: string, body: unknown) => server.api(token).put(`/api/messages/${id}/read-state`, body);

describe('PUT /api/messages/:messageId/read-state', () => {
  it('marks read, appends one message.read-state event, and publishes it after commit', async () => {
    const published: MailboxEvent[] = [];
    const stop = server.runtime.services.bus.subscribe((e) => published.push(e));
    const before = Date.now();
    const res = await put(t.a1.token, msgs[0]!.messageId, { isRead: true });
    stop();
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ messageId: msgs[0]!.messageId, isRead: true, readAtTs: expect.any(Number) });
    const readAtTs = res.body.data.readAtTs;
    expect(readAtTs).toBeGreaterThanOrEqual(before);
    const events = await eventsOf(server, t.a1.mailboxId);
    expect(events).toHaveLength(1);
    expect(events[0]!.type).toBe('message.read-state');
    expect(events[0]!.payload).toEqual({
      eventId: String(events[0]!.seq),
      type: 'message.read-state',
      mailboxId: t.a1.mailboxId,
      mailboxAddress: t.a1.address,
      occurredAtTs: readAtTs,
      data: { messageId: msgs[0]!.messageId, threadId: msgs[0]!.threadId, isRead: true, readAtTs },
    });
    expect(published).toEqual([events[0]!.payload]);
    const detail = await server.api(t.a1.token).get(`/api/messages/${msgs[0]!.messageId}`);
    expect(detail.body.data).toMatchObject({ isRead: true, readAtTs });
  });

  it('answers a no-op with the current state, keeps the first readAtTs and appends no event', async () => {
    const first = await put(t.a1.token, msgs[1]!.messageId, { isRead: true });
    const count = (await eventsOf(server, t.a1.mailboxId)).length;
    const again = await put(t.a1.token, msgs[1]!.messageId, { isRead: true });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
    expect(await eventsOf(server, t.a1.mailboxId)).toHaveLength(count);
  });

  it('marks unread again, with readAtTs null and an event', async () => {
    const res = await put(t.a1.token, msgs[1]!.messageId, { isRead: false });
    expect(res.body.data).toEqual({ messageId: msgs[1]!.messageId, isRead: false, readAtTs: null });
    const last = (await eventsOf(server, t.a1.mailboxId)).at(-1)!;
    expect(last.payload.data).toEqual({
      messageId: msgs[1]!.messageId,
      threadId: msgs[1]!.threadId,
      isRead: false,
      readAtTs: null,
    });
    const listed = (await server.api(t.a1.token).get('/api/messages')).body.data.items.find(
      (m: any) => m.messageId === msgs[1]!.messageId,
    );
    expect(listed).toMatchObject({ isRead: false, readAtTs: null });
  });

  it('lets a domain token act with or without mailboxAddress in the body', async () => {
    expect((await put(t.domA.token, msgs[2]!.messageId, { isRead: true })).status).toBe(200);
    expect((await put(t.domA.token, msgs[2]!.messageId, { isRead: false, mailboxAddress: t.a1.address })).status).toBe(
      200,
    );
    // Naming another mailbox than the message's is a 400 (docs/contract.md, "Domain tokens on a mailbox's objects").
    expect((await put(t.domA.token, msgs[2]!.messageId, { isRead: true, mailboxAddress: t.a2.address })).status).toBe(
      400,
    );
  });

  it('answers 404 for deleted, unknown, cross-mailbox and cross-domain messages', async () => {
    for (const id of [deleted.messageId, 'msg_nope', a2msg.messageId, b1msg.messageId]) {
      expect((await put(t.a1.token, id, { isRead: true })).status).toBe(404);
    }
    expect((await put(t.domB.token, msgs[0]!.messageId, { isRead: true })).status).toBe(404);
  });

  it('answers 400 for a bad body or mailboxAddress, 401 without token, 403 without MailboxRead', async () => {
    const id = msgs[3]!.messageId;
    expect((await put(t.a1.token, id, {})).status).toBe(400);
    expect((await put(t.a1.token, id, { isRead: 'yes' })).status).toBe(400);
    expect((await put(t.a1.token, id, { isRead: true, extra: 1 })).status).toBe(400);
    expect((await put(t.a1.token, id, { isRead: true, mailboxAddress: 'bad' })).status).toBe(400);
    expect((await put(t.a1.token, id, { isRead: true, mailboxAddress: t.a2.address })).status).toBe(400);
    expect((await server.api().put(`/api/messages/${id}/read-state`, { isRead: true })).status).toBe(401);
    const noRead = await mintMailboxToken(server, t.a1.mailboxId, ['MailboxSend', 'MailboxDelete']);
    expect((await put(noRead, id, { isRead: true })).status).toBe(403);
  });
});

describe('POST /api/messages/bulk-read-state', () => {
  it('changes the visible ids and reports foreign, deleted and unknown ones as 404 items', async () => {
    const ids = [
      msgs[4]!.messageId,
      a2msg.messageId,
      msgs[5]!.messageId,
      b1msg.messageId,
      'msg_missing',
      deleted.messageId,
      msgs[4]!.messageId,
    ];
    const before = (await eventsOf(server, t.a1.mailboxId)).length;
    const res = await server.api(t.a1.token).post('/api/messages/bulk-read-state', { ids, isRead: true });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.requestedCount).toBe(6);
    expect(d.succeededItems).toEqual([
      { messageId: msgs[4]!.messageId, isRead: true, readAtTs: expect.any(Number) },
      { messageId: msgs[5]!.messageId, isRead: true, readAtTs: expect.any(Number) },
    ]);
    expect(d.failedItems).toEqual(
      [a2msg, b1msg, { messageId: 'msg_missing' }, deleted].map((m) => ({
        messageId: m.messageId,
        code: 404,
        errMsg: 'Message not found.',
      })),
    );
    const events = (await eventsOf(server, t.a1.mailboxId)).slice(before);
    expect(events.map((e) => e.payload.data.messageId).sort()).toEqual([msgs[4]!.messageId, msgs[5]!.messageId].sort());
    expect(await eventsOf(server, t.a2.mailboxId)).toHaveLength(0);
  });

  it('spans the mailboxes of the domain for a domain token without mailboxAddress', async () => {
    const res = await server.api(t.domA.token).post('/api/messages/bulk-read-state', {
      ids: [msgs[0]!.messageId, a2msg.messageId, b1msg.messageId],
      isRead: true,
    });
    expect(res.body.data.succeededItems.map((i: any) => i.messageId)).toEqual([msgs[0]!.messageId, a2msg.messageId]);
    expect(res.body.data.failedItems.map((i: any) => i.messageId)).toEqual([b1msg.messageId]);
    const a2events = await eventsOf(server, t.a2.mailboxId);
    expect(a2events.map((e) => [e.type, e.payload.mailboxAddress, e.payload.data.messageId])).toEqual([
      ['message.read-state', t.a2.address, a2msg.messageId],
    ]);
  });

  it('answers 400 for 0 or 1001 ids and a missing isRead, 403 without MailboxRead, 401 without token', async () => {
    const api = server.api(t.a1.token);
    expect((await api.post('/api/messages/bulk-read-state', { ids: [], isRead: true })).status).toBe(400);
    const many = Array.from({ length: 1001 }, (_, i) => `msg_${i}`);
    expect((await api.post('/api/messages/bulk-read-state', { ids: many, isRead: true })).status).toBe(400);
    expect((await api.post('/api/messages/bulk-read-state', { ids: many.slice(0, 1000), isRead: true })).status).toBe(
      200,
    );
    expect((await api.post('/api/messages/bulk-read-state', { ids: ['x'] })).status).toBe(400);
    const noRead = await mintMailboxToken(server, t.a1.mailboxId, ['MailboxDelete']);
    expect((await server.api(noRead).post('/api/messages/bulk-read-state', { ids: ['x'], isRead: true })).status).toBe(
      403,
    );
    expect((await server.api().post('/api/messages/bulk-read-state', { ids: ['x'], isRead: true })).status).toBe(401);
  });
});
