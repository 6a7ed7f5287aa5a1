import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type ApiResponse, type TestServer } from '../support/harness.js';
import { seedMany, seedMessage, twoTenants, type Seeded, type Tenants } from '../support/seed-messages.js';

let server: TestServer;
let t: Tenants;
let seeded: Seeded[];
const outbound = new Set<string>();
beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
  const base = Date.now() - 3_600_000;
  seeded = await seedMany(server, 44, { mailboxId: t.a1.mailboxId, newest: new Date(base) });
  // Six messages sharing one instant: the id must break the tie, or pages would skip or repeat.
  const tie = new Date(base - 100_000);
  for (let i = 0; i < 6; i++) {
    const m = await seedMessage(server, {
      mailboxId: t.a1.mailboxId,
      direction: i % 2 ? 'outbound' : 'inbound',
      createdAt: tie,
    });
    seeded.push(m);
    if (i % 2) outbound.add(m.messageId);
  }
  await seedMany(server, 3, { mailboxId: t.a2.mailboxId });
});
afterAll(async () => {
  await server?.close();
});

/** Walks every page; `between` runs after each page fetch. */
async function walk(
  token: string,
  query: string,
  between?: () => Promise<void>,
): Promise<{ ids: string[]; pages: number; totals: number[] }> {
  const ids: string[] = [];
  const totals: number[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res: ApiResponse = await server
      .api(token)
      .get(`/api/messages?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status).toBe(200);
    ids.push(...res.body.data.items.map((m: any) => m.messageId));
    totals.push(res.body.data.totalCount);
    cursor = res.body.data.nextCursor;
    pages++;
    if (between) await between();
  } while (cursor);
  return { ids, pages, totals };
}

/** The order the API promises: created_at desc, then id desc. */
const expectedOrder = (rows: Seeded[]) =>
  [...rows]
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.messageId < b.messageId ? 1 : -1))
    .map((r) => r.messageId);

describe('keyset pagination', () => {
  it('visits each of 50 messages once, in order, with limit 7', async () => {
    const { ids, pages, totals } = await walk(t.a1.token, 'limit=7');
    expect(pages).toBe(8);
    expect(ids).toHaveLength(50);
    expect(new Set(ids).size).toBe(50);
    expect(ids).toEqual(expectedOrder(seeded));
    expect(new Set(totals)).toEqual(new Set([50]));
  });

  it('walks a direction filter the same way', async () => {
    const { ids } = await walk(t.a1.token, 'limit=7&direction=outbound');
    expect(ids).toEqual(expectedOrder(seeded).filter((id) => outbound.has(id)));
    expect(ids).toHaveLength(3);
  });

  it('neither repeats nor skips a message while new ones arrive between pages', async () => {
    const before = expectedOrder(seeded);
    const arrived: string[] = [];
    const { ids } = await walk(t.a1.token, 'limit=7', async () => {
      arrived.push((await seedMessage(server, { mailboxId: t.a1.mailboxId, subject: 'late' })).messageId);
    });
    expect(new Set(ids).size).toBe(ids.length);
    // New mail is newer than the walk's position, so it belongs to a fresh walk, not this one.
    expect(ids).toEqual(before);
    const fresh = await walk(t.a1.token, 'limit=200');
    expect(fresh.ids.slice(0, arrived.length)).toEqual([...arrived].reverse());
    expect(fresh.totals[0]).toBe(50 + arrived.length);
  });

  describe('cursor errors are 400 CURSOR_INVALID, never 500', () => {
    let cursor: string;
    beforeAll(async () => {
      cursor = (await server.api(t.a1.token).get('/api/messages?limit=3')).body.data.nextCursor;
    });
    const get = (token: string, query: string) => server.api(token).get(`/api/messages?${query}`);

    it.each([
      ['garbage', 'not-a-cursor'],
      ['three parts', 'a.b.c'],
      ['empty tag', 'eyJ0IjoxfQ.'],
      ['non-base64 body', '%%%.abc'],
    ])('%s', async (_n, bad) => {
      const res = await get(t.a1.token, `limit=3&cursor=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ data: null, code: 400, errMsg: 'cursor is invalid.' });
    });

    it('a cursor whose position was changed (tag no longer matches)', async () => {
      const [, tag] = cursor.split('.');
      const forged = `${Buffer.from(JSON.stringify({ t: 0, i: 'msg_x' })).toString('base64url')}.${tag}`;
      expect((await get(t.a1.token, `cursor=${encodeURIComponent(forged)}`)).status).toBe(400);
      const flipped = cursor.slice(0, -1) + (cursor.endsWith('A') ? 'B' : 'A');
      expect((await get(t.a1.token, `cursor=${encodeURIComponent(flipped)}`)).status).toBe(400);
    });

    it('a cursor transplanted to another filter or mailbox', async () => {
      expect((await get(t.a1.token, `direction=inbound&cursor=${encodeURIComponent(cursor)}`)).status).toBe(400);
      expect((await get(t.a2.token, `cursor=${encodeURIComponent(cursor)}`)).status).toBe(400);
      expect(
        (await get(t.domA.token, `mailboxAddress=${t.a2.address}&cursor=${encodeURIComponent(cursor)}`)).status,
      ).toBe(400);
    });

    it('the same cursor still works for the same list and for a domain token on that mailbox', async () => {
      expect((await get(t.a1.token, `limit=3&cursor=${encodeURIComponent(cursor)}`)).status).toBe(200);
      expect(
        (await get(t.domA.token, `mailboxAddress=${t.a1.address}&limit=3&cursor=${encodeURIComponent(cursor)}`)).status,
      ).toBe(200);
    });

    it('an over-long cursor', async () => {
      expect((await get(t.a1.token, `cursor=${'a'.repeat(600)}`)).status).toBe(400);
    });
  });
});
