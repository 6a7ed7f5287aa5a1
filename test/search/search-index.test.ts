import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/storage/database.js';
import { startSearchIndexer } from '../../src/core/state/search/search-indexer.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { ENGINE, startTestServer, type TestServer } from '../support/harness.js';
import { seedMessage, twoTenants, type Tenants } from '../support/seed-messages.js';
import { sendBody } from '../delivery/helpers.js';

// The search vector is filled after a message is stored (migration 20270201000000): by the
// worker's background pass, or by a search of the mailbox, which indexes its waiting mail first.
// This server runs the api role only, so no background pass races the assertions.

let server: TestServer;
let t: Tenants;

beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
});
afterAll(async () => {
  await server?.close();
});

const db = () => server.runtime.services.db.db;
const waiting = async (mailboxId: string) =>
  Number(
    (
      await sql<{ n: string | number }>`select count(*) as n from message
        where mailbox_id = ${mailboxId} and search_vector is null`.execute(db())
    ).rows[0]!.n,
  );

describe('search indexing after the message is stored', () => {
  it('a send stores no vector; a search of the mailbox indexes its waiting mail first and finds it', async () => {
    const sent = await server
      .api(t.a1.token)
      .post('/api/messages/send', sendBody('someone@remote.example', { bodyText: 'the zanzibarquokka plan' }));
    expect(sent.status).toBe(202);
    await seedMessage(server, { mailboxId: t.b1.mailboxId, subject: 'other tenant', bodyText: 'zanzibarquokka too' });
    expect(await waiting(t.a1.mailboxId)).toBe(1);

    const found = await server.api(t.a1.token).get('/api/messages/search?q=zanzibarquokka');
    expect(found.status).toBe(200);
    expect(found.body.data.items.map((m: { messageId: string }) => m.messageId)).toEqual([sent.body.data.messageId]);
    expect(await waiting(t.a1.mailboxId)).toBe(0);
    // Only the searched mailbox was indexed.
    expect(await waiting(t.b1.mailboxId)).toBe(1);
  });

  it("the worker's pass indexes every mailbox's waiting mail in batches", async () => {
    for (let i = 0; i < 5; i++)
      await seedMessage(server, { mailboxId: t.a2.mailboxId, subject: `batch ${i}`, bodyText: 'wombatlantern' });
    expect(await waiting(t.a2.mailboxId)).toBe(5);
    const indexer = startSearchIndexer(server.runtime.services.searchIndex, silentLogger, { intervalMs: 20 });
    try {
      await expect.poll(async () => (await waiting(t.a2.mailboxId)) + (await waiting(t.b1.mailboxId))).toBe(0);
    } finally {
      await indexer.stop();
    }
    const vector = (
      await sql<{ v: string }>`select search_vector::text as v from message
        where mailbox_id = ${t.a2.mailboxId} limit 1`.execute(db())
    ).rows[0]!.v;
    // Subject words weigh A, body words B (the SQL function of the migration).
    expect(vector).toMatch(/'batch':\d+A/);
    expect(vector).toMatch(/'wombatlantern':\d+B/);
    const found = await server.api(t.a2.token).get('/api/messages/search?q=wombatlantern');
    expect(found.body.data.items).toHaveLength(5);
  });

  // PGlite has one connection: a second transaction cannot hold a row while the pass runs.
  it.runIf(ENGINE === 'postgres')('a batch skips rows another transaction holds and leaves them waiting', async () => {
    const { messageId } = await seedMessage(server, { mailboxId: t.a2.mailboxId, subject: 'held', bodyText: 'x' });
    await server.runtime.services.db.tx(async (trx) => {
      await sql`select id from message where id = ${messageId} for update`.execute(trx);
      // The pass runs on another connection and must not wait for this one.
      expect(await server.runtime.services.searchIndex.indexSome()).toBe(0);
    });
    expect(await server.runtime.services.searchIndex.indexSome()).toBe(1);
  });
});
