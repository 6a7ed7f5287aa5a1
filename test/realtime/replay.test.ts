import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINE, REDIS_TEST_URL, startTestServer, type TestServer } from '../support/harness.js';
import { createTenants, seedMessage, type Tenants } from '../support/tenants.js';
import { eventsEmitted, socketsConnected } from '../../src/telemetry/metric-registry.js';
import { appendEvents, range } from '../events/helpers.js';
import { connect, Recorder, subscribe } from './client.js';

// Live events, replay by lastEventId and the switch between them (no gap, no duplicate), gap
// filling when the bus loses an announcement, and resync.required beyond retention.
const CAP = 20;
let server: TestServer;
let t: Tenants;
const open: Recorder[] = [];
const track = (r: Recorder): Recorder => {
  open.push(r);
  return r;
};

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'realtime'],
    env: {
      EVENT_RETENTION_MAX_PER_MAILBOX: String(CAP),
      ...(ENGINE === 'postgres' ? { REDIS_URL: REDIS_TEST_URL } : {}),
    },
  });
  t = await createTenants(server);
});
afterAll(async () => {
  for (const r of open) r.socket.close();
  await server?.close();
});

const services = () => server.runtime.services;
const fresh = async (local: string) =>
  server.createMailbox(t.X.token, `${local}-${Math.random().toString(36).slice(2, 8)}@${t.X.name}`);

describe('live events', () => {
  it('emits each change with its docs/contract.md name and payload, only to its own mailbox', async () => {
    const a1 = track(await subscribe(server.url, { auth: { token: t.A1.token } }));
    const a2 = track(await subscribe(server.url, { auth: { token: t.A2.token } }));
    const msg = await seedMessage(server, t.A1);
    await server.api(t.A1.token).put(`/api/messages/${msg.messageId}/read-state`, { isRead: true });
    await server.api(t.A1.token).delete(`/api/messages/${msg.messageId}`);
    await a1.until(() => a1.events.length >= 2, 5000, 'two events');
    expect(a1.all.map((e) => e.name)).toEqual(['subscription.ready', 'message.read-state', 'message.deleted']);
    const [read, del] = a1.events;
    expect(read).toEqual({
      eventId: expect.stringMatching(/^\d+$/),
      type: 'message.read-state',
      mailboxId: t.A1.mailboxId,
      mailboxAddress: t.A1.address,
      occurredAtTs: expect.any(Number),
      data: { messageId: msg.messageId, threadId: msg.threadId, isRead: true, readAtTs: expect.any(Number) },
    });
    expect(Number(del!.eventId)).toBe(Number(read!.eventId) + 1);
    expect(del!.data).toMatchObject({ messageId: msg.messageId, deletedAtTs: expect.any(Number) });
    await new Promise((r) => setTimeout(r, 200));
    expect(a2.events).toEqual([]);
  });

  it('delivers message.sent and message.received between hosted mailboxes', async () => {
    const sender = await fresh('sender');
    const rcpt = await fresh('rcpt');
    const out = track(await subscribe(server.url, { auth: { token: sender.token } }));
    const inb = track(await subscribe(server.url, { auth: { token: t.X.token, mailboxAddress: rcpt.address } }));
    // The api role alone has no worker: deliver the queued job through the core, as the worker would.
    const res = await server
      .api(sender.token)
      .post('/api/messages/send', { toAddress: rcpt.address, subject: 'Hello realtime', bodyText: 'Hi' });
    expect(res.status).toBe(202);
    await out.until(() => out.events.length === 1, 5000, 'message.sent');
    expect(out.events[0]).toMatchObject({
      type: 'message.sent',
      mailboxId: sender.mailboxId,
      data: { messageId: res.body.data.messageId },
    });
    const { OutboxWorker } = await import('../../src/core/flows/outbound/outbox-worker.js');
    const worker = new OutboxWorker(services(), { pollIntervalMs: 50, leaseMs: 10_000, workerId: 'test' });
    worker.start();
    try {
      await inb.until(() => inb.events.some((e) => e.type === 'message.received'), 10_000, 'message.received');
      await out.until(() => out.events.some((e) => e.type === 'message.delivery'), 10_000, 'message.delivery');
    } finally {
      await worker.stop();
    }
    expect(inb.events.find((e) => e.type === 'message.received')).toMatchObject({
      mailboxId: rcpt.mailboxId,
      mailboxAddress: rcpt.address,
      data: { subject: 'Hello realtime' },
    });
  });

  it('feeds the socketsConnected gauge and the eventsEmitted counter', async () => {
    const m = await fresh('metrics');
    const before = (await socketsConnected.get()).values[0]?.value ?? 0;
    const emittedBefore =
      (await eventsEmitted.get()).values.find((v) => v.labels.type === 'message.read-state')?.value ?? 0;
    const rec = await subscribe(server.url, { auth: { token: m.token } });
    expect((await socketsConnected.get()).values[0]?.value).toBe(before + 1);
    await appendEvents(services(), m.mailboxId, 1);
    await rec.until(() => rec.events.length === 1);
    expect(
      (await eventsEmitted.get()).values.find((v) => v.labels.type === 'message.read-state')?.value,
    ).toBeGreaterThan(emittedBefore);
    rec.socket.close();
    await new Promise((r) => setTimeout(r, 200));
    expect((await socketsConnected.get()).values[0]?.value).toBe(before);
  });
});

describe('replay by lastEventId', () => {
  it('replays the events after it, then continues live', async () => {
    const m = await fresh('replay');
    await appendEvents(services(), m.mailboxId, 5);
    const rec = track(await subscribe(server.url, { auth: { token: m.token, lastEventId: '2' } }));
    expect(rec.seqs()).toEqual([3, 4, 5]);
    expect((await rec.ready()).lastEventId).toBe('5');
    await appendEvents(services(), m.mailboxId, 2);
    await rec.until(() => rec.events.length === 5);
    expect(rec.seqs()).toEqual([3, 4, 5, 6, 7]);
  });

  it('loses nothing across a disconnect (the client reconnects with its last id)', async () => {
    const m = await fresh('reconnect');
    const rec = track(await subscribe(server.url, { auth: { token: m.token }, reconnection: true }));
    await appendEvents(services(), m.mailboxId, 3);
    await rec.until(() => rec.events.length === 3);
    rec.socket.io.engine.close(); // a dropped transport; socket.io-client reconnects by itself
    await appendEvents(services(), m.mailboxId, 4);
    await rec.ready(2);
    await appendEvents(services(), m.mailboxId, 1);
    await rec.until(() => rec.events.length === 8);
    expect(rec.seqs()).toEqual(range(1, 8));
  });

  it('has no gap and no duplicate while events keep committing during the replay', async () => {
    const m = await fresh('race');
    await appendEvents(services(), m.mailboxId, 10);
    let writing = true;
    // Yield to I/O between writes: PGlite answers without I/O, so a bare loop would starve the sockets.
    const writer = (async () => {
      while (writing) {
        await appendEvents(services(), m.mailboxId, 1);
        await new Promise((r) => setImmediate(r));
      }
    })();
    while ((await services().events.head(m.mailboxId)) <= 12) await new Promise((r) => setTimeout(r, 10));
    const recs: Recorder[] = [];
    for (const lastEventId of [0, 3, 7, 10, 12, null]) {
      recs.push(
        track(
          new Recorder(
            connect(server.url, { auth: { token: m.token, ...(lastEventId === null ? {} : { lastEventId }) } }),
          ),
        ),
      );
      await new Promise((r) => setTimeout(r, 30));
    }
    await new Promise((r) => setTimeout(r, 300));
    writing = false;
    await writer;
    const head = await services().events.head(m.mailboxId);
    expect(head).toBeGreaterThan(12);
    for (const [i, rec] of recs.entries()) {
      await rec.until(() => rec.seqs().at(-1) === head, 10_000, `client ${i} at head ${head}`);
      const got = rec.seqs();
      expect(got, `client ${i}`).toEqual(range(got[0]!, head));
    }
    expect(recs[0]!.seqs()[0]).toBe(1);
    expect(recs[1]!.seqs()[0]).toBe(4);
    expect(recs[2]!.seqs()[0]).toBe(8);
    expect(recs[3]!.seqs()[0]).toBe(11);
  });

  it('fills a gap from the log when the bus lost an announcement', async () => {
    const m = await fresh('gap');
    const rec = track(await subscribe(server.url, { auth: { token: m.token } }));
    await appendEvents(services(), m.mailboxId, 2, { publish: false });
    await appendEvents(services(), m.mailboxId, 1);
    await rec.until(() => rec.events.length === 3, 5000);
    expect(rec.seqs()).toEqual([1, 2, 3]);
  });

  it('delivers a lost announcement with no later event within the heal interval', async () => {
    const m = await fresh('heal');
    const rec = track(await subscribe(server.url, { auth: { token: m.token } }));
    await appendEvents(services(), m.mailboxId, 1, { publish: false });
    await rec.until(() => rec.events.length === 1, 4000, 'the healed event');
    expect(rec.seqs()).toEqual([1]);
  });

  it('ignores repeated and out-of-order announcements', async () => {
    const m = await fresh('dupes');
    const rec = track(await subscribe(server.url, { auth: { token: m.token } }));
    const events = await appendEvents(services(), m.mailboxId, 3, { publish: false });
    await services().bus.publish([events[2]!, events[0]!, events[0]!, events[1]!, events[2]!]);
    await rec.until(() => rec.events.length >= 3, 5000);
    await new Promise((r) => setTimeout(r, 200));
    expect(rec.seqs()).toEqual([1, 2, 3]);
  });
});

describe('resync.required', () => {
  it('is sent for an id older than retention, then live events continue from the head', async () => {
    const m = await fresh('resync');
    await appendEvents(services(), m.mailboxId, CAP + 10);
    await services().events.sweep();
    const rec = track(await subscribe(server.url, { auth: { token: m.token, lastEventId: 3 } }));
    expect(rec.all[0]).toEqual({
      name: 'resync.required',
      payload: {
        type: 'resync.required',
        mailboxId: m.mailboxId,
        mailboxAddress: m.address,
        lastEventId: '3',
        oldestEventId: '11',
        headEventId: String(CAP + 10),
        occurredAtTs: expect.any(Number),
      },
    });
    expect(rec.events).toEqual([]);
    expect((await rec.ready()).lastEventId).toBe(String(CAP + 10));
    await appendEvents(services(), m.mailboxId, 1);
    await rec.until(() => rec.events.length === 1);
    expect(rec.seqs()).toEqual([CAP + 11]);
  });

  it('is not sent for an id right at the retention cut', async () => {
    const m = await fresh('cut');
    await appendEvents(services(), m.mailboxId, CAP + 5);
    await services().events.sweep();
    const rec = track(await subscribe(server.url, { auth: { token: m.token, lastEventId: 5 } }));
    expect(rec.named('resync.required')).toEqual([]);
    expect(rec.seqs()).toEqual(range(6, CAP + 5));
  });

  it('is sent for an id ahead of the mailbox sequence', async () => {
    const m = await fresh('ahead');
    await appendEvents(services(), m.mailboxId, 2);
    const rec = track(await subscribe(server.url, { auth: { token: m.token, lastEventId: 50 } }));
    expect(rec.named('resync.required')).toMatchObject([{ lastEventId: '50', headEventId: '2' }]);
    expect((await rec.ready()).lastEventId).toBe('2');
  });
});
