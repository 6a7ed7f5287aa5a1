import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { countersOf, eventsOf, seedMany, twoTenants, type Seeded, type Tenants } from '../support/seed-messages.js';

let server: TestServer;
let t: Tenants;
let a1: Seeded[];
let a2: Seeded[];
beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
  a1 = await seedMany(server, 12, { mailboxId: t.a1.mailboxId });
  a2 = await seedMany(server, 12, { mailboxId: t.a2.mailboxId, direction: 'outbound' });
});
afterAll(async () => {
  await server?.close();
});

describe('concurrent changes', () => {
  it('deletes a message exactly once when the same DELETE races with itself', async () => {
    const target = a1[0]!;
    const results = await Promise.all(
      Array.from({ length: 6 }, () => server.api(t.a1.token).delete(`/api/messages/${target.messageId}`)),
    );
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
    const fresh = results.filter((r) => r.body.data.alreadyDeleted === false);
    expect(fresh).toHaveLength(1);
    expect(new Set(results.map((r) => r.body.data.deletedAtTs)).size).toBe(1);
    expect(await countersOf(server, t.a1.mailboxId)).toEqual({ inbound: 11, outbound: 0 });
    expect((await eventsOf(server, t.a1.mailboxId)).filter((e) => e.type === 'message.deleted')).toHaveLength(1);
  });

  it('runs overlapping bulk calls over two mailboxes in opposite orders without deadlock, counters exact', async () => {
    const pairs = Array.from({ length: 5 }, (_, i) => [
      a1[i + 1]!.messageId,
      a2[i]!.messageId,
      a1[i + 2]!.messageId,
      a2[i + 1]!.messageId,
    ]);
    const api = server.api(t.domA.token);
    const calls = pairs.flatMap((ids) => [
      api.post('/api/messages/bulk-delete', { ids }),
      api.post('/api/messages/bulk-delete', { ids: [...ids].reverse() }),
      api.post('/api/messages/bulk-read-state', { ids: [...ids].reverse(), isRead: true }),
    ]);
    const results = await Promise.all(calls);
    expect(results.map((r) => r.status)).toEqual(Array(results.length).fill(200));
    // Messages 1..6 of a1 and 0..5 of a2 are now deleted, each counted once.
    expect(await countersOf(server, t.a1.mailboxId)).toEqual({ inbound: 5, outbound: 0 });
    expect(await countersOf(server, t.a2.mailboxId)).toEqual({ inbound: 0, outbound: 6 });
    const total = async (token: string) => (await server.api(token).get('/api/messages')).body.data;
    expect((await total(t.a1.token)).items).toHaveLength(5);
    expect((await total(t.a2.token)).totalCount).toBe(6);
    expect((await eventsOf(server, t.a2.mailboxId)).filter((e) => e.type === 'message.deleted')).toHaveLength(6);
  });
});
