import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { createTenants, mintToken, seedMessage, type Tenants } from '../support/tenants.js';
import { fails, mcpClient, ok, sameError } from './helpers.js';

// The read-side tools against the HTTP API: for the same call, structuredContent equals the
// HTTP `data`, and an error carries the HTTP status as `code` and the same `errMsg`.

let server: TestServer;
let t: Tenants;
let a1: Client; // mailbox token of A1
let dx: Client; // domain token of X
let dy: Client; // domain token of Y (another tenant)

beforeAll(async () => {
  server = await startTestServer();
  t = await createTenants(server);
  [a1, dx, dy] = await Promise.all([
    mcpClient(server, t.A1.token),
    mcpClient(server, t.X.token),
    mcpClient(server, t.Y.token),
  ]);
});
afterAll(async () => {
  await Promise.all([a1, dx, dy].map((c) => c?.close()));
  await server?.close();
});

const http = (token: string) => server.api(token);
/** list_messages adds its change mark to the HTTP page (docs/api.md, "Change marks and ETags"). */
const page = <T extends { changeMark?: string; unchanged?: boolean }>({ changeMark, unchanged, ...rest }: T) => {
  expect(changeMark).toMatch(/^cm1\./);
  expect(unchanged).toBe(false);
  return rest;
};

describe('list_messages', () => {
  it('equals GET /api/messages page by page, mailbox token without mailboxAddress', async () => {
    for (let i = 0; i < 3; i++) await seedMessage(server, t.A1, { subject: `List ${i}` });
    const first = await ok(a1, 'list_messages', { limit: 2 });
    expect(page(first)).toEqual((await http(t.A1.token).get('/api/messages?limit=2')).body.data);
    expect(first.items).toHaveLength(2);
    const second = await ok(a1, 'list_messages', { limit: 2, cursor: first.nextCursor });
    expect(page(second)).toEqual(
      (await http(t.A1.token).get(`/api/messages?limit=2&cursor=${encodeURIComponent(first.nextCursor)}`)).body.data,
    );
    expect(page(await ok(a1, 'list_messages', { direction: 'outbound' }))).toEqual(
      (await http(t.A1.token).get('/api/messages?direction=outbound')).body.data,
    );
  });

  it('a domain token must name the mailbox (400), and may name any of its domain (equal to HTTP)', async () => {
    sameError(await http(t.X.token).get('/api/messages'), await fails(dx, 'list_messages', {}));
    expect((await fails(dx, 'list_messages', {})).code).toBe(400);
    const listed = await ok(dx, 'list_messages', { mailboxAddress: t.A1.address });
    expect(page(listed)).toEqual((await http(t.X.token).get(`/api/messages?mailboxAddress=${t.A1.address}`)).body.data);
  });

  it.each([
    ['limit 0', { limit: 0 }, 'limit=0'],
    ['limit 201', { limit: 201 }, 'limit=201'],
    ['a bad direction', { direction: 'sideways' }, 'direction=sideways'],
    ['a tampered cursor', { cursor: 'bm9wZQ' }, 'cursor=bm9wZQ'],
    ['an invalid mailboxAddress', { mailboxAddress: 'not an address' }, 'mailboxAddress=not%20an%20address'],
    ['another mailbox of the same domain', () => ({ mailboxAddress: t.A2.address }), 'mailboxAddress=A2'],
  ])('%s is the same 400 as HTTP', async (_name, argsOf, queryOf) => {
    const args = typeof argsOf === 'function' ? argsOf() : argsOf;
    const query = queryOf.replace('A2', t.A2.address);
    const mcp = await fails(a1, 'list_messages', args);
    expect(mcp.code).toBe(400);
    sameError(await http(t.A1.token).get(`/api/messages?${query}`), mcp);
  });

  it('a misspelt argument is a 400, not silently ignored', async () => {
    expect(await fails(dx, 'list_messages', { mailboxAdress: t.A1.address })).toEqual({
      code: 400,
      errorCode: 'VALIDATION_FAILED',
      errMsg: 'mailboxAdress: unknown key',
    });
  });

  it("a foreign domain's mailbox is 404; a missing scope is 403", async () => {
    sameError(
      await http(t.Y.token).get(`/api/messages?mailboxAddress=${t.A1.address}`),
      await fails(dy, 'list_messages', { mailboxAddress: t.A1.address }),
    );
    expect((await fails(dy, 'list_messages', { mailboxAddress: t.A1.address })).code).toBe(404);
    const { token } = await mintToken(server, {
      kind: 'mailbox',
      domainId: t.X.domainId,
      mailboxId: t.A1.mailboxId,
      scopes: ['MailboxSend'],
    });
    const narrow = await mcpClient(server, token);
    const err = await fails(narrow, 'list_messages', {});
    expect(err.code).toBe(403);
    sameError(await http(token).get('/api/messages'), err);
    await narrow.close();
  });
});

describe('get_message and get_thread', () => {
  it('equal GET /api/messages/{id} and GET /api/threads/{id}', async () => {
    const m = await seedMessage(server, t.A1, { subject: 'Detail' });
    expect(await ok(a1, 'get_message', { messageId: m.messageId })).toEqual(
      (await http(t.A1.token).get(`/api/messages/${m.messageId}`)).body.data,
    );
    expect(await ok(dx, 'get_message', { messageId: m.messageId })).toEqual(
      (await http(t.X.token).get(`/api/messages/${m.messageId}`)).body.data,
    );
    expect(await ok(a1, 'get_thread', { threadId: m.threadId })).toEqual(
      (await http(t.A1.token).get(`/api/threads/${m.threadId}`)).body.data,
    );
  });

  it("another mailbox's or tenant's id is 404, like HTTP", async () => {
    const other = await seedMessage(server, t.A2, { subject: 'Not yours' });
    for (const [client, token] of [
      [a1, t.A1.token],
      [dy, t.Y.token],
    ] as const) {
      const err = await fails(client, 'get_message', { messageId: other.messageId });
      expect(err.code).toBe(404);
      sameError(await http(token).get(`/api/messages/${other.messageId}`), err);
      expect((await fails(client, 'get_thread', { threadId: other.threadId })).code).toBe(404);
    }
    // Naming the wrong mailbox for a visible id: 404 as well.
    expect((await fails(dx, 'get_message', { messageId: other.messageId, mailboxAddress: t.A1.address })).code).toBe(
      404,
    );
    expect((await fails(a1, 'get_message', {})).code).toBe(400);
  });
});

describe('set_read_state and delete_messages', () => {
  it('mark read/unread like POST /api/messages/bulk-read-state; foreign ids fail per item with 404', async () => {
    const mine = await seedMessage(server, t.A1);
    const foreign = await seedMessage(server, t.B1);
    const res = await ok(a1, 'set_read_state', {
      ids: [mine.messageId, foreign.messageId, mine.messageId],
      isRead: true,
    });
    expect(res).toMatchObject({
      requestedCount: 2,
      succeededItems: [{ messageId: mine.messageId, isRead: true, readAtTs: expect.any(Number) }],
      failedItems: [{ messageId: foreign.messageId, code: 404, errMsg: expect.any(String) }],
    });
    // The same request over HTTP now changes nothing and answers the same (first readAtTs kept).
    expect(
      (
        await http(t.A1.token).post('/api/messages/bulk-read-state', {
          ids: [mine.messageId, foreign.messageId],
          isRead: true,
        })
      ).body.data,
    ).toEqual(res);
    const unread = await ok(a1, 'set_read_state', { ids: [mine.messageId], isRead: false });
    expect(unread.succeededItems[0]).toEqual({ messageId: mine.messageId, isRead: false, readAtTs: null });
    expect((await http(t.A1.token).get(`/api/messages/${mine.messageId}`)).body.data.isRead).toBe(false);
  });

  it('soft-delete like POST /api/messages/bulk-delete; again says alreadyDeleted; then hidden', async () => {
    const m = await seedMessage(server, t.A1, { subject: 'Delete me' });
    const first = await ok(a1, 'delete_messages', { ids: [m.messageId] });
    expect(first).toMatchObject({
      requestedCount: 1,
      succeededItems: [{ messageId: m.messageId, alreadyDeleted: false }],
      failedItems: [],
    });
    const again = await ok(a1, 'delete_messages', { ids: [m.messageId] });
    expect(again).toEqual((await http(t.A1.token).post('/api/messages/bulk-delete', { ids: [m.messageId] })).body.data);
    expect(again.succeededItems[0]).toEqual({ ...first.succeededItems[0], alreadyDeleted: true });
    expect((await fails(a1, 'get_message', { messageId: m.messageId })).code).toBe(404);
    const readDeleted = await ok(a1, 'set_read_state', { ids: [m.messageId], isRead: true });
    expect(readDeleted.failedItems).toEqual([{ messageId: m.messageId, code: 404, errMsg: expect.any(String) }]);
  });

  it('argument and scope errors match HTTP', async () => {
    sameError(
      await http(t.A1.token).post('/api/messages/bulk-delete', { ids: [] }),
      await fails(a1, 'delete_messages', { ids: [] }),
    );
    sameError(
      await http(t.A1.token).post('/api/messages/bulk-read-state', { ids: ['x'] }),
      await fails(a1, 'set_read_state', { ids: ['x'] }),
    );
    const { token } = await mintToken(server, {
      kind: 'mailbox',
      domainId: t.X.domainId,
      mailboxId: t.A1.mailboxId,
      scopes: ['MailboxRead'],
    });
    const reader = await mcpClient(server, token);
    const m = await seedMessage(server, t.A1);
    const err = await fails(reader, 'delete_messages', { ids: [m.messageId] });
    expect(err.code).toBe(403);
    sameError(await http(token).post('/api/messages/bulk-delete', { ids: [m.messageId] }), err);
    await reader.close();
  });
});
