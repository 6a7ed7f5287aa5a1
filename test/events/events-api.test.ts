import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { createTenants, ManualClock, mintToken, seedMessage, type Tenants } from '../support/tenants.js';
import { MAILBOX_TOKEN_SCOPES } from '../../src/core/access/scopes.js';
import { appendEvents, range, seqs } from './helpers.js';

// GET /api/events: the event log over HTTP (paging, the mailbox rules of the message list,
// retention answered as resyncRequired, never as a silent gap).
const CAP = 5;
const RETENTION_MS = 3_600_000;
let server: TestServer;
let t: Tenants;
const clock = new ManualClock();

beforeAll(async () => {
  server = await startTestServer({
    clock,
    env: { EVENT_RETENTION_MAX_PER_MAILBOX: String(CAP), EVENT_RETENTION: '1h' },
  });
  t = await createTenants(server);
});
afterAll(async () => {
  await server?.close();
});

const get = (token: string, query: Record<string, string | undefined> = {}) =>
  server
    .api(token)
    .get(
      `/api/events?${new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined))}`,
    );
const mailbox = async (local: string) => ({
  ...(await server.createMailbox(t.X.token, `${local}-${Math.random().toString(36).slice(2, 8)}@${t.X.name}`)),
  domainId: t.X.domainId,
});

describe('GET /api/events', () => {
  it('pages through the log in order, each event exactly once, with the wire shape of the hub', async () => {
    const m = await mailbox('pager');
    await appendEvents(server.runtime.services, m.mailboxId, 4);
    const seen: number[] = [];
    let after = '0';
    for (let pages = 0; pages < 10; pages++) {
      const res = await get(m.token, { after, limit: '3' });
      expect(res.status).toBe(200);
      const d = res.body.data;
      expect(d).toMatchObject({ resyncRequired: false, oldestEventId: '1', headEventId: '4' });
      seen.push(...seqs(d.items));
      after = d.lastEventId;
      if (!d.hasMore) break;
    }
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(after).toBe('4');
    const tail = (await get(m.token, { after: '4' })).body.data;
    expect(tail).toEqual({
      items: [],
      lastEventId: '4',
      hasMore: false,
      resyncRequired: false,
      oldestEventId: '1',
      headEventId: '4',
    });
  });

  it('serves the events real changes append (read state), with the log payload', async () => {
    const m = await mailbox('changes');
    const msg = await seedMessage(server, m);
    expect((await server.api(m.token).put(`/api/messages/${msg.messageId}/read-state`, { isRead: true })).status).toBe(
      200,
    );
    const items = (await get(m.token)).body.data.items;
    expect(items).toEqual([
      {
        eventId: '1',
        type: 'message.read-state',
        mailboxId: m.mailboxId,
        mailboxAddress: m.address,
        occurredAtTs: clock.now().getTime(),
        data: { messageId: msg.messageId, threadId: msg.threadId, isRead: true, readAtTs: clock.now().getTime() },
      },
    ]);
  });

  it('starts at the oldest retained event when after is absent', async () => {
    const m = await mailbox('noafter');
    await appendEvents(server.runtime.services, m.mailboxId, CAP + 3);
    await server.runtime.services.events.sweep();
    const d = (await get(m.token)).body.data;
    expect(seqs(d.items)).toEqual(range(4, CAP + 3));
    expect(d.resyncRequired).toBe(false);
  });

  it('answers resyncRequired (never a silent gap) for an after older than the count cap', async () => {
    const m = await mailbox('cap');
    await appendEvents(server.runtime.services, m.mailboxId, 12);
    expect((await server.runtime.services.events.sweep()).byCount).toBeGreaterThanOrEqual(12 - CAP);
    for (const after of ['0', '6']) {
      expect((await get(m.token, { after })).body.data).toEqual({
        items: [],
        lastEventId: '12',
        hasMore: false,
        resyncRequired: true,
        oldestEventId: '8',
        headEventId: '12',
      });
    }
    // Right at the cut nothing is missing.
    expect(seqs((await get(m.token, { after: '7' })).body.data.items)).toEqual(range(8, 12));
  });

  it('answers resyncRequired after the age limit removed everything, and not for a reader at the head', async () => {
    const m = await mailbox('age');
    await appendEvents(server.runtime.services, m.mailboxId, 3);
    clock.advance(RETENTION_MS + 1000);
    await server.runtime.services.events.sweep();
    expect((await get(m.token, { after: '1' })).body.data).toMatchObject({
      items: [],
      resyncRequired: true,
      oldestEventId: null,
      headEventId: '3',
      lastEventId: '3',
    });
    expect((await get(m.token, { after: '3' })).body.data).toMatchObject({
      items: [],
      resyncRequired: false,
      lastEventId: '3',
    });
    await appendEvents(server.runtime.services, m.mailboxId, 1);
    expect(seqs((await get(m.token, { after: '3' })).body.data.items)).toEqual([4]);
  });

  it('answers resyncRequired for an id the mailbox never issued', async () => {
    const m = await mailbox('ahead');
    await appendEvents(server.runtime.services, m.mailboxId, 2);
    expect((await get(m.token, { after: '99' })).body.data).toMatchObject({
      items: [],
      resyncRequired: true,
      headEventId: '2',
      lastEventId: '2',
    });
  });

  it('follows the mailbox rules of the message list', async () => {
    await appendEvents(server.runtime.services, t.A1.mailboxId, 2);
    await appendEvents(server.runtime.services, t.A2.mailboxId, 1);
    const own = (await get(t.A1.token)).body.data.items;
    expect(own.length).toBeGreaterThanOrEqual(2);
    expect(own.every((e: { mailboxId: string }) => e.mailboxId === t.A1.mailboxId)).toBe(true);
    expect((await get(t.A1.token, { mailboxAddress: t.A1.address })).status).toBe(200);
    expect(
      (await get(t.X.token, { mailboxAddress: t.A2.address })).body.data.items.every(
        (e: { mailboxId: string }) => e.mailboxId === t.A2.mailboxId,
      ),
    ).toBe(true);
    expect((await get(t.X.token)).status).toBe(400); // domain token without mailboxAddress
    expect((await get(t.A1.token, { mailboxAddress: t.A2.address })).status).toBe(400); // mailbox token naming another
    expect((await get(t.A1.token, { mailboxAddress: 'bad address' })).status).toBe(400);
    expect((await get(t.Y.token, { mailboxAddress: t.A1.address })).status).toBe(404); // another domain's mailbox
    expect((await get(t.X.token, { mailboxAddress: `ghost@${t.X.name}` })).status).toBe(404);
    expect((await server.api().get('/api/events')).status).toBe(401);
    const noRead = await mintToken(server, {
      kind: 'mailbox',
      domainId: t.X.domainId,
      mailboxId: t.A1.mailboxId,
      scopes: MAILBOX_TOKEN_SCOPES.filter((s) => s !== 'MailboxRead'),
    });
    expect((await get(noRead.token)).status).toBe(403);
  });

  it('refuses malformed after and limit with 400 in the envelope', async () => {
    for (const query of [{ after: 'abc' }, { after: '-1' }, { after: '1.5' }, { limit: '0' }, { limit: '201' }]) {
      const res = await get(t.A1.token, query);
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect(res.body).toMatchObject({ data: null, code: 400, errMsg: expect.any(String) });
    }
  });
});
