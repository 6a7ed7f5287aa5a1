import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/storage/database.js';
import {
  pageQuery,
  pageStatement,
  type PageFilter,
  type PagePosition,
} from '../../src/core/state/messages/message.store.js';
import type { Direction } from '../../src/core/state/messages/message.schemas.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { seedBulk, twoTenants, type Tenants } from '../support/seed-messages.js';

let server: TestServer;
let t: Tenants;
beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
  // Enough rows in several mailboxes that the planner has a real choice to make.
  await seedBulk(server, t.a1.mailboxId, 1200);
  await seedBulk(server, t.a2.mailboxId, 1200);
  await seedBulk(server, t.b1.mailboxId, 600);
  // A fifth of the outbound rows are scheduled sends that have not left (status=scheduled).
  await server.runtime.services.db.rows(
    sql`update message set delivery_status = 'scheduled' where direction = 'outbound' and right(id, 1) in ('1', '3')`,
  );
  await server.runtime.services.db.rows(sql`analyze message`);
});
afterAll(async () => {
  await server?.close();
});

/** The plan of the exact SQL the service runs for one page, as text lines. */
async function plan(
  direction: Direction | undefined,
  after: PagePosition | null,
  filter: PageFilter = 'none',
): Promise<string> {
  const rows = await server.runtime.services.db.rows(
    sql<{ 'QUERY PLAN': string }>`explain ${pageQuery(t.a1.mailboxId, direction, after, 8, filter)}`,
  );
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

describe('a message page is an index range scan', () => {
  const middle: PagePosition = { t: Date.now() - 1000 * 1000, i: `${'~'}` };

  it.each([
    ['first page: message_list_idx', undefined, null, 'message_list_idx', 'none'],
    ['later page: message_list_idx', undefined, middle, 'message_list_idx', 'none'],
    ['first page with direction: message_list_dir_idx', 'inbound', null, 'message_list_dir_idx', 'none'],
    ['later page with direction: message_list_dir_idx', 'outbound', middle, 'message_list_dir_idx', 'none'],
    ['first page of status=scheduled: message_scheduled_idx', undefined, null, 'message_scheduled_idx', 'scheduled'],
    ['later page of status=scheduled: message_scheduled_idx', undefined, middle, 'message_scheduled_idx', 'scheduled'],
  ] as const)('%s, without a sort', async (_name, direction, after, index, filter) => {
    const text = await plan(direction, after, filter);
    expect(text).toMatch(new RegExp(`Index (Only )?Scan using ${index} on message`));
    expect(text).not.toMatch(/Sort|Seq Scan|Bitmap/);
    // The keyset position is part of the index condition, not a filter applied after reading.
    if (after) expect(text).toMatch(/Index Cond: .*ROW\(created_at, \(?id\)?(::text)?\) < ROW/);
    expect(text).not.toMatch(/Filter:/);
  });

  it('serves the pages through the API with the counters as totalCount', async () => {
    const res = await server.api(t.a1.token).get('/api/messages?limit=200&direction=inbound');
    expect(res.body.data.items).toHaveLength(200);
    expect(res.body.data.totalCount).toBe(600);
    const next = await server
      .api(t.a1.token)
      .get(`/api/messages?limit=200&direction=inbound&cursor=${encodeURIComponent(res.body.data.nextCursor)}`);
    expect(next.body.data.items[0].createdAtTs).toBeLessThanOrEqual(res.body.data.items[199].createdAtTs);
  });
});

describe('the page statement the service runs', () => {
  it('is pageQuery compiled, for every shape and values, reused across calls', () => {
    const db = server.runtime.services.db.db;
    const positions: Array<PagePosition | null> = [null, { t: 1_700_000_000_123, i: 'msg_x' }, { t: 0, i: 'a' }];
    for (const direction of [undefined, 'inbound', 'outbound'] as const)
      for (const after of positions)
        for (const filter of ['none', 'pending', 'held', 'scheduled'] as const)
          for (const [mailboxId, limit] of [
            [t.a1.mailboxId, 51],
            [t.b1.mailboxId, 1],
          ] as const) {
            const expected = pageQuery(mailboxId, direction, after, limit, filter).compile(db);
            const statement = pageStatement(db, mailboxId, direction, after, limit, filter);
            expect(statement.sql).toBe(expected.sql);
            expect(statement.parameters).toEqual(expected.parameters);
            expect(pageStatement(db, 'other', direction, after, 2, filter).sql).toBe(statement.sql);
          }
  });
});
