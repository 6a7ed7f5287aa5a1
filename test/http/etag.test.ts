import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { twoTenants, type Tenants } from '../support/seed-messages.js';
import { ifNoneMatchHas } from '../../src/channels/http/etag.js';

// Change marks as ETags (docs/api.md, "Change marks and ETags"): a repeated read of an unchanged
// mailbox is 304 without its data; any change to what the read returns gives a new ETag.
let server: TestServer;
let t: Tenants;
let messageId: string;
let threadId: string;
beforeAll(async () => {
  // The worker delivers a1 → a2 locally, so a2 has a received message to read.
  server = await startTestServer({ roles: ['api', 'worker'] });
  t = await twoTenants(server);
  const sent = await server.api(t.a1.token).post('/api/messages/send', {
    toAddress: t.a2.address,
    subject: 'etag',
    bodyText: 'hello',
  });
  expect(sent.status).toBe(202);
  ({ messageId, threadId } = sent.body.data);
  // Local delivery changes the sender's mailbox (delivery status): wait for it, so the marks
  // below only change when a test changes something.
  for (let i = 0; i < 200; i++) {
    const inbox = await server.api(t.a2.token).get('/api/messages');
    const detail = await server.api(t.a1.token).get(`/api/messages/${messageId}`);
    const delivered = detail.body.data.deliveryStatus === 'delivered';
    if (inbox.body.data.items.length === 1 && delivered) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('local delivery did not finish');
});
afterAll(async () => {
  await server?.close();
});

const get = (token: string, path: string, etag?: string) =>
  server.api(token).get(path, etag ? { 'if-none-match': etag } : {});

async function etagOf(token: string, path: string): Promise<string> {
  const res = await get(token, path);
  expect(res.status).toBe(200);
  expect(res.headers.get('cache-control')).toBe('private, no-cache');
  const etag = res.headers.get('etag');
  expect(etag).toMatch(/^W\/"cm1\.[A-Za-z0-9_-]{22}"$/);
  return etag!;
}

describe('ETag and If-None-Match on list, message and thread', () => {
  it('answers 304 with no body for the current ETag, on all three reads', async () => {
    for (const path of ['/api/messages', `/api/messages/${messageId}`, `/api/threads/${threadId}`]) {
      const etag = await etagOf(t.a1.token, path);
      const again = await get(t.a1.token, path, etag);
      expect(again.status).toBe(304);
      expect(again.body).toBeNull();
      expect(again.headers.get('etag')).toBe(etag);
      // A list of tags, weak or strong spelling, still matches (RFC 9110 weak comparison).
      expect((await get(t.a1.token, path, `W/"cm1.other", ${etag.slice(2)}`)).status).toBe(304);
    }
  });

  it('gives a new ETag after each change to the mailbox, and 200 for the old one', async () => {
    const path = '/api/messages';
    const before = await etagOf(t.a1.token, path);
    // A real change (a no-op read-state appends no event and keeps the mark).
    const isRead = !(await server.api(t.a1.token).get(`/api/messages/${messageId}`)).body.data.isRead;
    const read = await server.api(t.a1.token).put(`/api/messages/${messageId}/read-state`, { isRead });
    expect(read.status).toBe(200);
    const stale = await get(t.a1.token, path, before);
    expect(stale.status).toBe(200);
    expect(stale.body.data.items[0].isRead).toBe(isRead);
    const after = stale.headers.get('etag')!;
    expect(after).not.toBe(before);
    expect((await get(t.a1.token, path, after)).status).toBe(304);
  });

  it('binds the ETag to the request and the token', async () => {
    const one = await etagOf(t.a1.token, '/api/messages?limit=1');
    const two = await etagOf(t.a1.token, '/api/messages?limit=2');
    expect(one).not.toBe(two);
    expect((await get(t.a1.token, '/api/messages?limit=2', one)).status).toBe(200);
    // The domain token reading the same mailbox has marks of its own.
    const path = `/api/messages?mailboxAddress=${encodeURIComponent(t.a1.address)}`;
    const asDomain = await etagOf(t.domA.token, path);
    expect((await get(t.domA.token, path, asDomain)).status).toBe(304);
    expect((await get(t.a1.token, '/api/messages', asDomain)).status).toBe(200);
  });

  it('never answers 304 where the read itself would refuse', async () => {
    const path = `/api/messages/${messageId}`;
    const etag = await etagOf(t.a1.token, path);
    expect((await server.api('mbxm_notatoken').get(path, { 'if-none-match': etag })).status).toBe(401);
    // Another tenant presenting the ETag gets its own answer: 404, not 304.
    expect((await get(t.b1.token, path, etag)).status).toBe(404);
    // `*` is not taken as a match: a mark does not know whether the message still exists.
    expect((await get(t.a1.token, path, '*')).status).toBe(200);
    const del = await server.api(t.a1.token).delete(path);
    expect(del.status).toBe(200);
    expect((await get(t.a1.token, path, etag)).status).toBe(404);
  });

  it('follows every mailbox of the domain for a domain token reading by id', async () => {
    const received = (await server.api(t.a2.token).get('/api/messages')).body.data.items[0];
    const path = `/api/messages/${received.messageId}`;
    const etag = await etagOf(t.domA.token, path);
    expect((await get(t.domA.token, path, etag)).status).toBe(304);
    // A change in another mailbox of the domain (a1) changes what the domain token can see.
    const other = await server.api(t.a1.token).post('/api/messages/send', {
      toAddress: 'someone@elsewhere.example',
      subject: 'elsewhere',
      bodyText: 'y',
    });
    expect(other.status).toBe(202);
    expect((await get(t.domA.token, path, etag)).status).toBe(200);
  });
});

describe('ifNoneMatchHas', () => {
  it('compares weakly over a list and ignores * and empty headers', () => {
    expect(ifNoneMatchHas('W/"a"', 'W/"a"')).toBe(true);
    expect(ifNoneMatchHas('"a"', 'W/"a"')).toBe(true);
    expect(ifNoneMatchHas(' W/"b" , W/"a" ', 'W/"a"')).toBe(true);
    expect(ifNoneMatchHas('W/"b"', 'W/"a"')).toBe(false);
    expect(ifNoneMatchHas('*', 'W/"a"')).toBe(false);
    expect(ifNoneMatchHas('', 'W/"a"')).toBe(false);
  });
});
