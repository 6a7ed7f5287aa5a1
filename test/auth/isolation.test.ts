import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../src/channels/http/routes/index.js';
import { sql } from '../../src/storage/database.js';
import { startTestServer, type TestServer, type ApiResponse } from '../support/harness.js';
import {
  createTenants,
  mintToken,
  seedMessage,
  type MailboxFixture,
  type Tenants,
  type SeededMessage,
} from '../support/tenants.js';

// Tenant isolation, parameterised over two tenants (domain X: A1, A2; domain Y: B1) in both
// directions. Every object id of another tenant, and of a sibling mailbox for a mailbox token,
// must be a 404, exactly like an id that does not exist. Naming another mailbox by address is the
// spec's 400 for a mailbox token and a 404 for a domain token of another domain.

let server: TestServer;
let t: Tenants;
const seeded = new Map<string, SeededMessage & { childTokenId: string }>();

beforeAll(async () => {
  server = await startTestServer();
  t = await createTenants(server);
  for (const m of [t.A1, t.A2, t.B1]) {
    const msg = await seedMessage(server, m);
    const child = await mintToken(server, {
      kind: 'mailbox',
      domainId: m.domainId,
      mailboxId: m.mailboxId,
      scopes: ['MailboxRead'],
    });
    seeded.set(m.mailboxId, { ...msg, childTokenId: child.tokenId });
  }
});
afterAll(async () => {
  await server?.close();
});

const present = (method: string, path: string) => allRoutes.some((r) => r.method === method && r.path === path);

/** Calls every route that names one of the victim's objects by id; each answer must be 404. */
async function byId(token: string, victim: MailboxFixture, ownAddress: string): Promise<Array<[string, ApiResponse]>> {
  const api = server.api(token);
  const v = seeded.get(victim.mailboxId)!;
  const calls: Array<[string, string, string, () => Promise<ApiResponse>]> = [
    ['GET', '/api/messages/:messageId', 'get message', () => api.get(`/api/messages/${v.messageId}`)],
    [
      'PUT',
      '/api/messages/:messageId/read-state',
      'read-state',
      () => api.put(`/api/messages/${v.messageId}/read-state`, { isRead: true }),
    ],
    ['DELETE', '/api/messages/:messageId', 'delete message', () => api.delete(`/api/messages/${v.messageId}`)],
    ['GET', '/api/threads/:threadId', 'get thread', () => api.get(`/api/threads/${v.threadId}`)],
    [
      'POST',
      '/api/messages/:messageId/reply',
      'reply',
      () => api.post(`/api/messages/${v.messageId}/reply`, { mailboxAddress: ownAddress, bodyText: 'x' }),
    ],
  ];
  const out: Array<[string, ApiResponse]> = [];
  for (const [method, path, name, call] of calls) if (present(method, path)) out.push([name, await call()]);
  return out;
}

/** Bulk calls answer 200 per docs/contract.md; a foreign id must land in failedItems as a 404. */
async function bulk(token: string, victim: MailboxFixture, own: { mailboxAddress?: string }) {
  const api = server.api(token);
  const ids = [seeded.get(victim.mailboxId)!.messageId];
  const out: ApiResponse[] = [];
  if (present('POST', '/api/messages/bulk-read-state'))
    out.push(await api.post('/api/messages/bulk-read-state', { ...own, ids, isRead: true }));
  if (present('POST', '/api/messages/bulk-delete'))
    out.push(await api.post('/api/messages/bulk-delete', { ...own, ids }));
  return out;
}

function expectBulkRefused(res: ApiResponse) {
  if (res.status === 404) return;
  expect(res.status).toBe(200);
  expect(res.body.data.succeededItems).toEqual([]);
  expect(res.body.data.failedItems.map((f: any) => f.code)).toEqual([404]);
}

/** Calls naming the victim mailbox by address: `status` is 400 (mailbox token) or 404 (domain token). */
async function byAddress(token: string, victim: MailboxFixture): Promise<Array<[string, ApiResponse]>> {
  const api = server.api(token);
  const out: Array<[string, ApiResponse]> = [];
  if (present('GET', '/api/messages'))
    out.push(['list', await api.get(`/api/messages?mailboxAddress=${encodeURIComponent(victim.address)}`)]);
  if (present('POST', '/api/messages/send'))
    out.push([
      'send',
      await api.post('/api/messages/send', {
        mailboxAddress: victim.address,
        toAddress: 'x@remote.example',
        subject: 's',
        bodyText: 'b',
      }),
    ]);
  if (present('POST', '/api/messages/attachments')) {
    const form = new FormData();
    form.set('mailboxAddress', victim.address);
    form.set('file', new Blob(['x']), 'x.txt');
    out.push(['upload', await api.raw('/api/messages/attachments', { method: 'POST', body: form })]);
  }
  return out;
}

const statuses = (calls: Array<[string, ApiResponse]>) => Object.fromEntries(calls.map(([n, r]) => [n, r.status]));
const all = (calls: Array<[string, ApiResponse]>, status: number) =>
  Object.fromEntries(calls.map(([n]) => [n, status]));

describe.each([
  { name: 'X against Y', attacker: () => ({ domain: t.X, mailbox: t.A1, sibling: t.A2 }), victims: () => [t.B1] },
  { name: 'Y against X', attacker: () => ({ domain: t.Y, mailbox: t.B1, sibling: null }), victims: () => [t.A1, t.A2] },
])('isolation: $name', ({ attacker, victims }) => {
  it("a mailbox token gets 404 for every object of another tenant's mailboxes and of its sibling mailbox", async () => {
    const { mailbox, sibling } = attacker();
    for (const victim of [...victims(), ...(sibling ? [sibling] : [])]) {
      const calls = await byId(mailbox.token, victim, mailbox.address);
      expect(statuses(calls)).toEqual(all(calls, 404));
      for (const res of await bulk(mailbox.token, victim, {})) expectBulkRefused(res);
      const v = seeded.get(victim.mailboxId)!;
      const api = server.api(mailbox.token);
      for (const res of [
        await api.post(`/api/mailbox/access-tokens/${v.childTokenId}/reveal`),
        await api.post(`/api/mailbox/access-tokens/${v.childTokenId}/disable`),
        await api.delete(`/api/mailbox/access-tokens/${v.childTokenId}`),
      ])
        expect(res.status).toBe(404);
      // Naming another mailbox by address is the spec's 400 for a mailbox token.
      const named = await byAddress(mailbox.token, victim);
      expect(statuses(named)).toEqual(all(named, 400));
    }
  });

  it("a domain token gets 404 for every object and mailbox id of another domain's mailboxes", async () => {
    const { domain, mailbox } = attacker();
    const api = server.api(domain.token);
    for (const victim of victims()) {
      const calls = await byId(domain.token, victim, mailbox.address);
      expect(statuses(calls)).toEqual(all(calls, 404));
      for (const res of await bulk(domain.token, victim, { mailboxAddress: mailbox.address })) expectBulkRefused(res);
      const named = await byAddress(domain.token, victim);
      expect(statuses(named)).toEqual(all(named, 404));
      const v = seeded.get(victim.mailboxId)!;
      const base = `/api/domain/mailboxes/${victim.mailboxId}`;
      for (const res of [
        await api.post(`${base}/password`, { password: 'a-long-password' }),
        await api.get(`${base}/access-tokens`),
        await api.post(`${base}/access-tokens`, { tokenName: 'x', scopes: ['MailboxRead'] }),
        await api.post(`${base}/access-tokens/${v.childTokenId}/reveal`),
        await api.post(`${base}/access-tokens/${v.childTokenId}/disable`),
        await api.delete(`${base}/access-tokens/${v.childTokenId}`),
        // The victim's token id under the attacker's own mailbox id is just as unknown.
        await api.post(`/api/domain/mailboxes/${mailbox.mailboxId}/access-tokens/${v.childTokenId}/reveal`),
      ])
        expect(res.status).toBe(404);
      const listed = await api.get('/api/domain/mailboxes');
      expect(listed.body.data.items.map((m: any) => m.mailboxId)).not.toContain(victim.mailboxId);
    }
  });

  it("leaves the victims' objects untouched", async () => {
    for (const victim of victims()) {
      const v = seeded.get(victim.mailboxId)!;
      const { db } = server.runtime.services;
      const msg = await db.one(
        sql<{
          is_read: boolean;
          deleted_at: string | null;
        }>`select is_read, deleted_at from message where id = ${v.messageId}`,
      );
      expect(msg).toEqual({ is_read: false, deleted_at: null });
      const tok = await db.one(
        sql<{ disabled_at: string | null }>`select disabled_at from access_token where id = ${v.childTokenId}`,
      );
      expect(tok).toEqual({ disabled_at: null });
      const mb = await db.one(
        sql<{ password_hash: string | null }>`select password_hash from mailbox where id = ${victim.mailboxId}`,
      );
      expect(mb).toEqual({ password_hash: null });
    }
  });
});
