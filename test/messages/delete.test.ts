import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import {
  countersOf,
  eventsOf,
  mintMailboxToken,
  seedMany,
  seedMessage,
  twoTenants,
  type Seeded,
  type Tenants,
} from '../support/seed-messages.js';

let server: TestServer;
let t: Tenants;
let inb: Seeded[];
let out: Seeded[];
let a2msg: Seeded;
let b1msg: Seeded;
beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
  inb = await seedMany(server, 5, { mailboxId: t.a1.mailboxId, direction: 'inbound' });
  out = await seedMany(server, 4, {
    mailboxId: t.a1.mailboxId,
    direction: 'outbound',
    newest: new Date(Date.now() - 60_000),
  });
  a2msg = await seedMessage(server, { mailboxId: t.a2.mailboxId });
  b1msg = await seedMessage(server, { mailboxId: t.b1.mailboxId });
});
afterAll(async () => {
  await server?.close();
});

const del = (token: string, id: string, query = '') => server.api(token).delete(`/api/messages/${id}${query}`);
const total = async (query = '') => (await server.api(t.a1.token).get(`/api/messages${query}`)).body.data.totalCount;

describe('DELETE /api/messages/:messageId', () => {
  it('soft-deletes, decrements the direction counter, appends message.deleted, and hides the message', async () => {
    const target = inb[0]!;
    const res = await del(t.a1.token, target.messageId);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      messageId: target.messageId,
      deletedAtTs: expect.any(Number),
      alreadyDeleted: false,
    });
    const { deletedAtTs } = res.body.data;
    expect(await countersOf(server, t.a1.mailboxId)).toEqual({ inbound: 4, outbound: 4 });
    expect(await total()).toBe(8);
    expect(await total('?direction=inbound')).toBe(4);
    expect(await total('?direction=outbound')).toBe(4);
    const events = await eventsOf(server, t.a1.mailboxId);
    expect(events.map((e) => e.payload)).toEqual([
      {
        eventId: String(events[0]!.seq),
        type: 'message.deleted',
        mailboxId: t.a1.mailboxId,
        mailboxAddress: t.a1.address,
        occurredAtTs: deletedAtTs,
        data: { messageId: target.messageId, threadId: target.threadId, direction: 'inbound', deletedAtTs },
      },
    ]);
    expect((await server.api(t.a1.token).get(`/api/messages/${target.messageId}`)).status).toBe(404);
    expect((await server.api(t.a1.token).get(`/api/threads/${target.threadId}`)).status).toBe(404);
    const listed = (await server.api(t.a1.token).get('/api/messages')).body.data.items.map((m: any) => m.messageId);
    expect(listed).not.toContain(target.messageId);
    expect(listed).toHaveLength(8);
  });

  it('answers a second delete with alreadyDeleted and the first deletedAtTs, changing nothing', async () => {
    const target = inb[1]!;
    const first = await del(t.a1.token, target.messageId);
    const before = {
      counters: await countersOf(server, t.a1.mailboxId),
      events: (await eventsOf(server, t.a1.mailboxId)).length,
    };
    const again = await del(t.a1.token, target.messageId);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({
      messageId: target.messageId,
      deletedAtTs: first.body.data.deletedAtTs,
      alreadyDeleted: true,
    });
    expect(await countersOf(server, t.a1.mailboxId)).toEqual(before.counters);
    expect(await eventsOf(server, t.a1.mailboxId)).toHaveLength(before.events);
  });

  it('decrements the outbound counter for outbound mail', async () => {
    const before = await countersOf(server, t.a1.mailboxId);
    await del(t.a1.token, out[0]!.messageId);
    expect(await countersOf(server, t.a1.mailboxId)).toEqual({
      inbound: before.inbound,
      outbound: before.outbound - 1,
    });
    expect(await total('?direction=outbound')).toBe(before.outbound - 1);
  });

  it('lets a domain token delete with or without mailboxAddress; naming another mailbox is 400', async () => {
    // docs/contract.md, "Domain tokens on a mailbox's objects": it must name the object's mailbox.
    const wrong = await del(t.domA.token, out[1]!.messageId, `?mailboxAddress=${t.a2.address}`);
    expect(wrong.status).toBe(400);
    expect(wrong.body.errorCode).toBe('TARGET_MAILBOX_MISMATCH');
    expect(
      (await del(t.domA.token, out[1]!.messageId, `?mailboxAddress=${t.a1.address}`)).body.data.alreadyDeleted,
    ).toBe(false);
    expect((await del(t.domA.token, out[1]!.messageId)).body.data.alreadyDeleted).toBe(true);
  });

  it('answers 404 across mailboxes and domains and for unknown ids, touching nothing', async () => {
    for (const id of [a2msg.messageId, b1msg.messageId, 'msg_nope'])
      expect((await del(t.a1.token, id)).status).toBe(404);
    expect((await del(t.domB.token, inb[2]!.messageId)).status).toBe(404);
    expect((await del(t.a2.token, inb[2]!.messageId)).status).toBe(404);
    expect((await server.api(t.a2.token).get(`/api/messages/${a2msg.messageId}`)).status).toBe(200);
    expect((await server.api(t.a1.token).get(`/api/messages/${inb[2]!.messageId}`)).status).toBe(200);
  });

  it('answers 400 for a bad or foreign mailboxAddress, 401 without token, 403 without MailboxDelete', async () => {
    const id = inb[2]!.messageId;
    expect((await del(t.a1.token, id, '?mailboxAddress=bad')).status).toBe(400);
    expect((await del(t.a1.token, id, `?mailboxAddress=${t.b1.address}`)).status).toBe(400);
    expect((await server.api().delete(`/api/messages/${id}`)).status).toBe(401);
    const readOnly = await mintMailboxToken(server, t.a1.mailboxId, ['MailboxRead']);
    const res = await del(readOnly, id);
    expect(res.status).toBe(403);
    expect(res.body.errMsg).toContain('MailboxDelete');
    expect((await server.api(t.a1.token).get(`/api/messages/${id}`)).status).toBe(200);
  });
});

describe('POST /api/messages/bulk-delete', () => {
  it('deletes visible ids in one go, reports the others as 404 items, and keeps counters exact', async () => {
    const before = await countersOf(server, t.a1.mailboxId);
    const ids = [
      inb[2]!.messageId,
      b1msg.messageId,
      out[2]!.messageId,
      'msg_missing',
      a2msg.messageId,
      inb[0]!.messageId,
    ];
    const res = await server.api(t.a1.token).post('/api/messages/bulk-delete', { ids });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.requestedCount).toBe(6);
    expect(d.succeededItems).toEqual([
      { messageId: inb[2]!.messageId, deletedAtTs: expect.any(Number), alreadyDeleted: false },
      { messageId: out[2]!.messageId, deletedAtTs: expect.any(Number), alreadyDeleted: false },
      { messageId: inb[0]!.messageId, deletedAtTs: expect.any(Number), alreadyDeleted: true },
    ]);
    expect(d.failedItems).toEqual(
      [b1msg.messageId, 'msg_missing', a2msg.messageId].map((messageId) => ({
        messageId,
        code: 404,
        errMsg: 'Message not found.',
      })),
    );
    expect(await countersOf(server, t.a1.mailboxId)).toEqual({
      inbound: before.inbound - 1,
      outbound: before.outbound - 1,
    });
    expect(await total()).toBe(before.inbound + before.outbound - 2);
    expect((await server.api(t.a2.token).get(`/api/messages/${a2msg.messageId}`)).status).toBe(200);
    const types = (await eventsOf(server, t.a1.mailboxId)).slice(-2).map((e) => [e.type, e.payload.data.messageId]);
    expect(types).toEqual(
      expect.arrayContaining([
        ['message.deleted', inb[2]!.messageId],
        ['message.deleted', out[2]!.messageId],
      ]),
    );
  });

  it('spans the domain for a domain token without mailboxAddress, and stops at the domain', async () => {
    const res = await server
      .api(t.domA.token)
      .post('/api/messages/bulk-delete', { ids: [a2msg.messageId, b1msg.messageId] });
    expect(res.body.data.succeededItems.map((i: any) => i.messageId)).toEqual([a2msg.messageId]);
    expect(res.body.data.failedItems.map((i: any) => i.code)).toEqual([404]);
    expect(await countersOf(server, t.a2.mailboxId)).toEqual({ inbound: 0, outbound: 0 });
    expect(await countersOf(server, t.b1.mailboxId)).toEqual({ inbound: 1, outbound: 0 });
  });

  it('answers 400 for 0 or 1001 ids or a bad mailboxAddress, 403 without MailboxDelete', async () => {
    const api = server.api(t.a1.token);
    expect((await api.post('/api/messages/bulk-delete', { ids: [] })).status).toBe(400);
    expect(
      (await api.post('/api/messages/bulk-delete', { ids: Array.from({ length: 1001 }, (_, i) => `m${i}`) })).status,
    ).toBe(400);
    expect((await api.post('/api/messages/bulk-delete', {})).status).toBe(400);
    expect((await api.post('/api/messages/bulk-delete', { ids: ['x'], mailboxAddress: 'bad' })).status).toBe(400);
    expect((await api.post('/api/messages/bulk-delete', { ids: ['x'], mailboxAddress: t.a2.address })).status).toBe(
      400,
    );
    expect(
      (await server.api(t.domA.token).post('/api/messages/bulk-delete', { ids: ['x'], mailboxAddress: t.b1.address }))
        .status,
    ).toBe(404);
    const readOnly = await mintMailboxToken(server, t.a1.mailboxId, ['MailboxRead']);
    expect((await server.api(readOnly).post('/api/messages/bulk-delete', { ids: [inb[3]!.messageId] })).status).toBe(
      403,
    );
    expect((await server.api().post('/api/messages/bulk-delete', { ids: ['x'] })).status).toBe(401);
  });
});
