import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/storage/database.js';
import { searchPageQuery } from '../../src/core/state/search/message-search.store.js';
import { parseSearchQuery } from '../../src/core/state/search/search-query.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { seedBulk, seedMessage, twoTenants, type Tenants } from '../support/seed-messages.js';
import { mcpClient, ok, fails } from '../mcp/helpers.js';

// GET /api/messages/search and MCP search_messages over real storage (both engines).

let server: TestServer;
let t: Tenants;
const ids: Record<string, string> = {};
const day = (d: string) => new Date(`${d}T12:00:00Z`);

beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
  const a1 = t.a1.mailboxId;
  const seed = async (name: string, m: Parameters<typeof seedMessage>[1]) => {
    ids[name] = (await seedMessage(server, m)).messageId;
  };
  await seed('invoice', {
    mailboxId: a1,
    subject: 'Your invoice for March',
    bodyText: 'Please find the quarterly invoice attached. Total due soon.',
    fromAddress: 'billing@acme.example',
    fromDisplayName: 'ACME Billing',
    attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', sizeBytes: 10 }],
    createdAt: day('2026-03-05'),
  });
  await seed('report', {
    mailboxId: a1,
    subject: 'Weekly report',
    bodyText: 'The weekly report is ready. No invoice here.',
    fromAddress: 'boss@corp.example',
    readAt: day('2026-03-11'),
    createdAt: day('2026-03-10'),
  });
  await seed('sent', {
    mailboxId: a1,
    direction: 'outbound',
    subject: 'Re: Weekly report',
    bodyText: 'Thanks, the report looks good.',
    to: ['boss@corp.example'],
    cc: ['team@corp.example'],
    createdAt: day('2026-03-12'),
  });
  await seed('html', {
    mailboxId: a1,
    subject: 'Grüße aus Köln',
    bodyText: null,
    bodyHtml: '<p>Die <b>Rechnung</b> kommt morgen.</p>',
    fromAddress: 'anna@beispiel.example',
    createdAt: day('2026-03-15'),
  });
  await seed('deleted', {
    mailboxId: a1,
    subject: 'Deleted invoice',
    bodyText: 'invoice in the bin',
    deletedAt: day('2026-03-16'),
    createdAt: day('2026-03-16'),
  });
  // Same words in other mailboxes: never found from a1.
  await seed('other', {
    mailboxId: t.a2.mailboxId,
    subject: 'Your invoice',
    bodyText: 'invoice',
    createdAt: day('2026-03-05'),
  });
  await seed('foreign', {
    mailboxId: t.b1.mailboxId,
    subject: 'Your invoice',
    bodyText: 'invoice',
    createdAt: day('2026-03-05'),
  });
});
afterAll(async () => {
  await server?.close();
});

const search = (q: string, token = t.a1.token, extra = '') =>
  server.api(token).get(`/api/messages/search?q=${encodeURIComponent(q)}${extra}`);
const found = async (q: string): Promise<string[]> => {
  const res = await search(q);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const byId = Object.fromEntries(Object.entries(ids).map(([k, v]) => [v, k]));
  return res.body.data.items.map((i: { messageId: string }) => byId[i.messageId] ?? i.messageId);
};

describe('search: words and operators', () => {
  it.each([
    ['a word in the body or subject', 'invoice', ['report', 'invoice']],
    ['words are ANDed', 'weekly invoice', ['report']],
    ['case-insensitive', 'INVOICE', ['report', 'invoice']],
    ['a quoted phrase needs adjacent words in order', '"weekly report"', ['sent', 'report']],
    ['a phrase in the wrong order does not match', '"report weekly"', []],
    ['HTML-only bodies are indexed without their tags', 'rechnung', ['html']],
    ['non-ASCII words', 'köln', ['html']],
    ['from: matches the address', 'from:acme.example', ['invoice']],
    ['from: matches the display name', 'from:billing', ['invoice']],
    ['to: matches To and Cc', 'to:team@corp', ['sent']],
    ['subject: only the subject', 'subject:invoice', ['invoice']],
    ['subject: with a phrase', 'subject:"weekly report"', ['sent', 'report']],
    ['has:attachment', 'has:attachment', ['invoice']],
    ['is:read', 'is:read', ['report']],
    ['is:unread with a word', 'is:unread report', ['sent']],
    ['before: excludes that day', 'before:2026-03-10', ['invoice']],
    ['after: includes that day', 'after:2026-03-12', ['html', 'sent']],
    ['before: and after: together', 'after:2026-03-06 before:2026-03-13', ['sent', 'report']],
    ['direction:outbound', 'direction:outbound', ['sent']],
    ['direction:inbound with a word', 'direction:inbound report', ['report']],
    [
      'a combination of everything',
      'invoice from:acme has:attachment is:unread direction:inbound after:2026-03-01',
      ['invoice'],
    ],
    ['a URL is a word, not an operator', 'https://nowhere.example', []],
    ['soft-deleted mail never matches', 'bin', []],
  ])('%s (%s)', async (_name, q, expected) => {
    expect(await found(q)).toEqual(expected);
  });

  it.each([
    ['unknown operator', 'foo:bar', /Unknown operator "foo:"/],
    ['operator without value', 'from: alice', /from: needs a value/],
    ['bad has:', 'has:pdf', /has: accepts only "attachment"/],
    ['bad is:', 'is:starred', /is: accepts "read" or "unread"/],
    ['bad date', 'before:2026-02-30', /before: needs a date as YYYY-MM-DD/],
    ['bad date format', 'after:yesterday', /after: needs a date/],
    ['bad direction', 'direction:sideways', /direction: accepts "inbound" or "outbound"/],
    ['unclosed quote', '"weekly report', /not closed/],
    ['empty', '   ', /q is empty/],
    ['punctuation only', '!!! ...', /no word with a letter or digit/],
    ['contradiction', 'is:read is:unread', /cannot both hold/],
  ])('400 SEARCH_QUERY_INVALID: %s', async (_name, q, message) => {
    const res = await search(q);
    expect(res.status).toBe(400);
    expect(res.body.errMsg).toMatch(message);
  });
});

describe('search: visibility and paging', () => {
  it('a domain token names the mailbox; another domain cannot see it', async () => {
    const mine = await search('invoice', t.domA.token, `&mailboxAddress=${encodeURIComponent(t.a2.address)}`);
    expect(mine.body.data.items.map((i: { messageId: string }) => i.messageId)).toEqual([ids.other]);
    const missing = await search('invoice', t.domA.token);
    expect(missing.status).toBe(400);
    const foreign = await search('invoice', t.domB.token, `&mailboxAddress=${encodeURIComponent(t.a1.address)}`);
    expect(foreign.status).toBe(404);
    const otherMailbox = await search('invoice', t.b1.token, `&mailboxAddress=${encodeURIComponent(t.a1.address)}`);
    expect(otherMailbox.status).toBe(400);
    const own = await search('invoice', t.b1.token);
    expect(own.body.data.items.map((i: { messageId: string }) => i.messageId)).toEqual([ids.foreign]);
  });

  it('pages newest first while mail arrives, with no repeat and no gap; a cursor is bound to its query', async () => {
    const box = await server.createMailbox(t.domA.token, `pager@${t.domA.name}`);
    const base = Date.now() - 100_000;
    const older: string[] = [];
    for (let i = 0; i < 7; i++)
      older.push(
        (
          await seedMessage(server, {
            mailboxId: box.mailboxId,
            subject: `alpha ${i}`,
            createdAt: new Date(base + i * 1000),
          })
        ).messageId,
      );
    const seen: string[] = [];
    let cursor: string | null = null;
    let arrivals = 0;
    do {
      const res = await search('alpha', box.token, `&limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.items.map((i: { messageId: string }) => i.messageId));
      cursor = res.body.data.nextCursor;
      // New matching mail lands between pages: it belongs before the first page, never in a later one.
      await seedMessage(server, { mailboxId: box.mailboxId, subject: `alpha new ${arrivals++}` });
      if (cursor) {
        const other = await search('beta', box.token, `&cursor=${encodeURIComponent(cursor)}`);
        expect(other.status).toBe(400);
      }
    } while (cursor);
    expect(seen).toEqual([...older].reverse());
  });
});

describe('search: MCP and the index', () => {
  it('search_messages answers like the route, and its errors are the same 400', async () => {
    const client = await mcpClient(server, t.a1.token);
    try {
      const page = await ok(client, 'search_messages', { q: 'subject:invoice' });
      expect(page.items.map((i: { messageId: string }) => i.messageId)).toEqual([ids.invoice]);
      const err = await fails(client, 'search_messages', { q: 'nope:x' });
      expect(err.code).toBe(400);
      expect(err.errMsg).toMatch(/Unknown operator/);
    } finally {
      await client.close();
    }
  });

  it('EXPLAIN of a word search on a seeded mailbox uses the GIN index message_search_idx', async () => {
    const box = await server.createMailbox(t.domA.token, `big@${t.domA.name}`);
    await seedBulk(server, box.mailboxId, 3000);
    await seedMessage(server, { mailboxId: box.mailboxId, subject: 'needle', bodyText: 'a rare zanzibar word' });
    await sql`analyze message`.execute(server.runtime.services.db.db);
    const query = searchPageQuery(
      { kind: 'mailbox', mailboxId: box.mailboxId },
      box.mailboxId,
      parseSearchQuery('zanzibar'),
      null,
      51,
    );
    const rows = await server.runtime.services.db.rows(sql<{ 'QUERY PLAN': string }>`explain ${query}`);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/message_search_idx/);
    const res = await search('zanzibar', box.token);
    expect(res.body.data.items).toHaveLength(1);
  });
});
