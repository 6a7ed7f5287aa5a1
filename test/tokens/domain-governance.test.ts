import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintToken } from '../support/tenants.js';

// Domain governance (spec): a domain token with DomainManage manages its own domain's mailboxes,
// passwords and mailbox tokens. Another domain's mailbox id is a 404; a mailbox token a 403.

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

const tokensOf = (mailboxId: string) => `/api/domain/mailboxes/${mailboxId}/access-tokens`;

async function domainWithMailbox() {
  const d = await server.createDomain();
  const m = await server.createMailbox(d.token, `m@${d.name}`);
  return { d, m, api: server.api(d.token) };
}

describe('GET /api/domain/mailboxes', () => {
  it('pages with limit and cursor, with totalCount, only over its own domain', async () => {
    const d = await server.createDomain();
    const other = await server.createDomain();
    for (const l of ['c', 'a', 'b']) await server.createMailbox(d.token, `${l}@${d.name}`);
    await server.createMailbox(other.token, `z@${other.name}`);
    const api = server.api(d.token);
    const first = await api.get('/api/domain/mailboxes?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.items.map((m: any) => m.address)).toEqual([`a@${d.name}`, `b@${d.name}`]);
    expect(first.body.data).toMatchObject({ totalCount: 3, nextCursor: expect.any(String) });
    expect(Object.keys(first.body.data.items[0]).sort()).toEqual([
      'address',
      'displayName',
      'expiresAtTs',
      'mailboxId',
    ]);
    const second = await api.get(
      `/api/domain/mailboxes?limit=2&cursor=${encodeURIComponent(first.body.data.nextCursor)}`,
    );
    expect(second.body.data).toMatchObject({ items: [{ address: `c@${d.name}` }], nextCursor: null, totalCount: 3 });
  });

  it.each(['limit=0', 'limit=201', 'limit=x', 'cursor=garbage', 'cursor=abc.def'])('answers 400 for %s', async (q) => {
    const { api } = await domainWithMailbox();
    const res = await api.get(`/api/domain/mailboxes?${q}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ data: null, code: 400 });
  });

  it("refuses another domain's cursor (400)", async () => {
    const a = await domainWithMailbox();
    await server.createMailbox(a.d.token, `n@${a.d.name}`);
    const b = await domainWithMailbox();
    const cursor = (await a.api.get('/api/domain/mailboxes?limit=1')).body.data.nextCursor;
    expect((await b.api.get(`/api/domain/mailboxes?cursor=${encodeURIComponent(cursor)}`)).status).toBe(400);
  });
});

describe('POST /api/domain/mailboxes', () => {
  it('creates like POST /api/mailboxes (201, no-store, bootstrap token), 409 on a duplicate', async () => {
    const d = await server.createDomain();
    const res = await server
      .api(d.token)
      .post('/api/domain/mailboxes', { address: `new@${d.name}`, displayName: 'New' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body.data).toMatchObject({
      mailbox: { address: `new@${d.name}`, displayName: 'New' },
      initialAccessToken: expect.stringMatching(/^mbxm_/),
    });
    expect((await server.api(d.token).post('/api/domain/mailboxes', { address: `new@${d.name}` })).status).toBe(409);
  });

  it("refuses another domain's address (403)", async () => {
    const a = await server.createDomain();
    const b = await server.createDomain();
    expect((await server.api(a.token).post('/api/domain/mailboxes', { address: `x@${b.name}` })).status).toBe(403);
  });
});

describe('POST /api/domain/mailboxes/:mailboxId/password', () => {
  it('sets the password, after which password login works', async () => {
    const { m, api } = await domainWithMailbox();
    const res = await api.post(`/api/domain/mailboxes/${m.mailboxId}/password`, { password: 'a-long-password' });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ mailboxId: m.mailboxId, address: m.address, passwordSet: true });
    const login = await server
      .api()
      .post('/api/mailbox/auth/login/password', { mailboxAddress: m.address, password: 'a-long-password' });
    expect(login.status).toBe(200);
  });

  it('answers 400 for a short password, 404 for an unknown or foreign mailbox id', async () => {
    const { m, api } = await domainWithMailbox();
    const foreign = await domainWithMailbox();
    expect((await api.post(`/api/domain/mailboxes/${m.mailboxId}/password`, { password: 'short' })).status).toBe(400);
    expect((await api.post('/api/domain/mailboxes/mbx_nope/password', { password: 'a-long-password' })).status).toBe(
      404,
    );
    expect(
      (await api.post(`/api/domain/mailboxes/${foreign.m.mailboxId}/password`, { password: 'a-long-password' })).status,
    ).toBe(404);
  });
});

describe('/api/domain/mailboxes/:mailboxId/access-tokens', () => {
  it("lists every token of the mailbox (the bootstrap too) and mirrors the mailbox routes' shapes", async () => {
    const { m, api } = await domainWithMailbox();
    const created = await api.post(tokensOf(m.mailboxId), { tokenName: 'ci', scopes: ['MailboxRead', 'MailboxSend'] });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    expect(created.body.data).toMatchObject({
      tokenName: 'ci',
      createdSource: 'domain',
      accessToken: expect.stringMatching(/^mbxm_/),
    });
    const listed = await api.get(tokensOf(m.mailboxId));
    expect(listed.body.data.map((t: any) => t.tokenId).sort()).toEqual([m.tokenId, created.body.data.tokenId].sort());
    // The new token is a mailbox token of that mailbox: it can self-govern nothing (no TokenManage) …
    expect((await server.api(created.body.data.accessToken).get('/api/mailbox/access-tokens')).status).toBe(403);
    const revealed = await api.post(`${tokensOf(m.mailboxId)}/${created.body.data.tokenId}/reveal`);
    expect(revealed.status).toBe(200);
    expect(revealed.headers.get('cache-control')).toBe('no-store');
    expect(revealed.body.data).toEqual({
      tokenId: created.body.data.tokenId,
      accessToken: created.body.data.accessToken,
    });
    const disabled = await api.post(`${tokensOf(m.mailboxId)}/${created.body.data.tokenId}/disable`);
    expect(disabled.body.data).toMatchObject({
      tokenId: created.body.data.tokenId,
      disabledAtTs: expect.any(Number),
      canRevealPlaintext: false,
    });
    expect((await api.post(`${tokensOf(m.mailboxId)}/${created.body.data.tokenId}/reveal`)).status).toBe(409);
    const deleted = await api.delete(`${tokensOf(m.mailboxId)}/${created.body.data.tokenId}`);
    expect(deleted.body.data).toEqual({ tokenId: created.body.data.tokenId, deleted: true });
  });

  it('never grants DomainManage, nor scopes the domain token lacks, nor a later expiry (400)', async () => {
    const { d, m, api } = await domainWithMailbox();
    expect((await api.post(tokensOf(m.mailboxId), { tokenName: 'x', scopes: ['DomainManage'] })).status).toBe(400);
    const limited = await mintToken(server, {
      kind: 'domain',
      domainId: d.domainId,
      scopes: ['DomainManage', 'MailboxRead'],
    });
    const lapi = server.api(limited.token);
    expect((await lapi.post(tokensOf(m.mailboxId), { tokenName: 'x', scopes: ['MailboxSend'] })).status).toBe(400);
    expect(
      (
        await lapi.post(tokensOf(m.mailboxId), {
          tokenName: 'x',
          scopes: ['MailboxRead'],
          expiresAtTs: Date.now() + 2 * 86_400_000,
        })
      ).status,
    ).toBe(400);
    expect((await lapi.post(tokensOf(m.mailboxId), { tokenName: 'x', scopes: ['MailboxRead'] })).status).toBe(201);
  });

  it("answers 404 for another domain's mailbox, and for a token of another mailbox under this one", async () => {
    const { d, m, api } = await domainWithMailbox();
    const sibling = await server.createMailbox(d.token, `sibling@${d.name}`);
    const foreign = await domainWithMailbox();
    for (const res of [
      await api.get(tokensOf(foreign.m.mailboxId)),
      await api.post(tokensOf(foreign.m.mailboxId), { tokenName: 'x', scopes: ['MailboxRead'] }),
      await api.post(`${tokensOf(foreign.m.mailboxId)}/${foreign.m.tokenId}/reveal`),
      await api.post(`${tokensOf(m.mailboxId)}/${sibling.tokenId}/reveal`),
      await api.post(`${tokensOf(m.mailboxId)}/${sibling.tokenId}/disable`),
      await api.delete(`${tokensOf(m.mailboxId)}/${sibling.tokenId}`),
    ])
      expect(res.status).toBe(404);
  });

  it('refuses a mailbox token (403) and a domain token without DomainManage (403)', async () => {
    const { d, m } = await domainWithMailbox();
    const noManage = await mintToken(server, {
      kind: 'domain',
      domainId: d.domainId,
      scopes: ['MailboxRead', 'MailboxSend'],
    });
    for (const token of [m.token, noManage.token]) {
      const api = server.api(token);
      const answers = [
        await api.get('/api/domain/mailboxes'),
        await api.post('/api/domain/mailboxes', { address: `q@${d.name}` }),
        await api.post(`/api/domain/mailboxes/${m.mailboxId}/password`, { password: 'a-long-password' }),
        await api.get(tokensOf(m.mailboxId)),
        await api.post(`${tokensOf(m.mailboxId)}/${m.tokenId}/disable`),
      ];
      expect(answers.map((a) => a.status)).toEqual([403, 403, 403, 403, 403]);
    }
  });
});
