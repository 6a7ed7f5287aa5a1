import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock, mintToken, type MailboxFixture } from '../support/tenants.js';
import { sql } from '../../src/storage/database.js';

// Token self-governance (spec): a mailbox token with TokenManage manages its own mailbox's later
// tokens. The clock is manual and only moves when a test says so, so expiries are exact.

const DAY = 86_400_000;
const BASE = '/api/mailbox/access-tokens';
let server: TestServer;
const clock = new ManualClock();

beforeAll(async () => {
  server = await startTestServer({ clock });
});
afterAll(async () => {
  await server?.close();
});

async function mailbox(): Promise<MailboxFixture & { domainToken: string }> {
  const d = await server.createDomain();
  const m = await server.createMailbox(d.token, `m@${d.name}`);
  return { ...m, domainId: d.domainId, domainToken: d.token };
}

const isTs = (v: unknown) => typeof v === 'number' && Number.isInteger(v);

describe('POST /api/mailbox/access-tokens', () => {
  it('creates a token (201, no-store) that works, with the creation result fields', async () => {
    const m = await mailbox();
    const res = await server.api(m.token).post(BASE, { tokenName: 'reader', scopes: ['MailboxRead', 'TokenManage'] });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const d = res.body.data;
    expect(Object.keys(d).sort()).toEqual([
      'accessToken',
      'createdAtTs',
      'createdSource',
      'expiresAtTs',
      'policy',
      'scopes',
      'tokenId',
      'tokenName',
      'tokenPrefix',
    ]);
    expect(d).toMatchObject({
      tokenName: 'reader',
      scopes: ['MailboxRead', 'TokenManage'],
      createdSource: 'self',
      createdAtTs: clock.now().getTime(),
    });
    expect(d.tokenId).toMatch(/^tok_/);
    expect(d.accessToken).toMatch(/^mbxm_[0-9A-Za-z]{38}$/);
    expect(d.tokenPrefix).toBe(d.accessToken.slice(0, 12));
    expect(isTs(d.expiresAtTs)).toBe(true);
    expect((await server.api(d.accessToken).get(BASE)).status).toBe(200);
  });

  it('defaults expiry to the caller expiry when that is sooner than 90 days', async () => {
    const m = await mailbox();
    const callerExp = clock.now().getTime() + 10 * DAY;
    const caller = await mintToken(server, {
      kind: 'mailbox',
      domainId: m.domainId,
      mailboxId: m.mailboxId,
      expiresAt: new Date(callerExp),
    });
    const res = await server.api(caller.token).post(BASE, { tokenName: 'x', scopes: ['MailboxRead'] });
    expect(res.body.data.expiresAtTs).toBe(callerExp);
  });

  it('defaults expiry to 90 days when the caller lives longer', async () => {
    const m = await mailbox();
    const long = await mintToken(server, {
      kind: 'mailbox',
      domainId: m.domainId,
      mailboxId: m.mailboxId,
      expiresAt: new Date(clock.now().getTime() + 400 * DAY),
    });
    const res = await server.api(long.token).post(BASE, { tokenName: 'x', scopes: ['MailboxRead'] });
    expect(res.body.data.expiresAtTs).toBe(clock.now().getTime() + 90 * DAY);
  });

  it('accepts an explicit expiry up to and including the caller expiry', async () => {
    const m = await mailbox();
    const parentExp = clock.now().getTime() + 10 * DAY;
    const parent = await mintToken(server, {
      kind: 'mailbox',
      domainId: m.domainId,
      mailboxId: m.mailboxId,
      expiresAt: new Date(parentExp),
    });
    const api = server.api(parent.token);
    expect(
      (await api.post(BASE, { tokenName: 'x', scopes: ['MailboxRead'], expiresAtTs: parentExp })).body.data.expiresAtTs,
    ).toBe(parentExp);
    expect(
      (await api.post(BASE, { tokenName: 'x', scopes: ['MailboxRead'], expiresAtTs: parentExp - DAY })).status,
    ).toBe(201);
  });

  it.each([
    ['scopes beyond the caller', { scopes: ['MailboxSend'] }],
    ['DomainManage', { scopes: ['DomainManage'] }],
    ['an unknown scope', { scopes: ['Root'] }],
    ['zero scopes', { scopes: [] }],
    ['no scopes field', { scopes: undefined }],
    ['no tokenName', { tokenName: undefined }],
    ['an expiry after the caller expiry', { expiresAtTs: 'caller+1' }],
    ['an expiry in the past', { expiresAtTs: 'past' }],
    ['an expiry of now', { expiresAtTs: 'now' }],
    ['a garbage expiry', { expiresAtTs: 'tomorrow' }],
    ['a fractional expiry', { expiresAtTs: 'fraction' }],
    ['an expiry beyond any date', { expiresAtTs: 9_000_000_000_000_000 }],
    ['an unknown field', { admin: true }],
  ])('refuses %s with 400', async (_name, patch) => {
    const m = await mailbox();
    const now = clock.now().getTime();
    const parent = await mintToken(server, {
      kind: 'mailbox',
      domainId: m.domainId,
      mailboxId: m.mailboxId,
      scopes: ['MailboxRead', 'TokenManage'],
      expiresAt: new Date(now + DAY),
    });
    const exp = { 'caller+1': now + DAY + 1, past: now - 1000, now, fraction: now + 1000.5 } as Record<string, number>;
    const body: Record<string, unknown> = { tokenName: 'x', scopes: ['MailboxRead'], ...patch };
    if (typeof body.expiresAtTs === 'string' && body.expiresAtTs in exp) body.expiresAtTs = exp[body.expiresAtTs];
    const res = await server.api(parent.token).post(BASE, body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ data: null, code: 400 });
  });
});

describe('GET /api/mailbox/access-tokens', () => {
  it('lists records with every field typed: …Ts integer ms or null', async () => {
    const m = await mailbox();
    const created = (await server.api(m.token).post(BASE, { tokenName: 'child', scopes: ['MailboxRead'] })).body.data;
    const res = await server.api(m.token).get(BASE);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).not.toBe('no-store');
    const child = res.body.data.find((t: any) => t.tokenName === 'child');
    expect(Object.keys(child).sort()).toEqual([
      'canRevealPlaintext',
      'createdAtTs',
      'createdSource',
      'disabledAtTs',
      'expiresAtTs',
      'lastUsedAtTs',
      'lastUsedRemoteIp',
      'policy',
      'scopes',
      'tokenId',
      'tokenName',
      'tokenPrefix',
    ]);
    expect(child).toMatchObject({
      scopes: ['MailboxRead'],
      createdSource: 'self',
      disabledAtTs: null,
      lastUsedAtTs: null,
      lastUsedRemoteIp: null,
      canRevealPlaintext: true,
    });
    expect(isTs(child.createdAtTs) && isTs(child.expiresAtTs)).toBe(true);
    expect(JSON.stringify(res.body)).not.toContain(created.accessToken); // a list never carries plaintext
    expect(child).not.toHaveProperty('accessToken');
  });

  it('sees only tokens created at or after the caller; earlier ones are 404 (documented rule)', async () => {
    const m = await mailbox(); // its bootstrap token is the earliest
    clock.advance(1000);
    const later = (await server.api(m.token).post(BASE, { tokenName: 'later', scopes: ['MailboxRead', 'TokenManage'] }))
      .body.data;
    const listed = await server.api(later.accessToken).get(BASE);
    expect(listed.body.data.map((t: any) => t.tokenId)).toEqual([later.tokenId]);
    const api = server.api(later.accessToken);
    expect((await api.post(`${BASE}/${m.tokenId}/reveal`)).status).toBe(404);
    expect((await api.post(`${BASE}/${m.tokenId}/disable`)).status).toBe(404);
    expect((await api.delete(`${BASE}/${m.tokenId}`)).status).toBe(404);
    // …while the earlier token sees the later one, and itself.
    const byBootstrap = await server.api(m.token).get(BASE);
    expect(byBootstrap.body.data.map((t: any) => t.tokenId).sort()).toEqual([m.tokenId, later.tokenId].sort());
  });
});

describe('reveal, disable, delete', () => {
  it('reveals inside the window (200, no-store) the plaintext that was created', async () => {
    const m = await mailbox();
    const created = (await server.api(m.token).post(BASE, { tokenName: 'r', scopes: ['MailboxRead'] })).body.data;
    const res = await server.api(m.token).post(`${BASE}/${created.tokenId}/reveal`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body.data).toEqual({ tokenId: created.tokenId, accessToken: created.accessToken });
  });

  it('refuses to reveal a later token wider than the caller (403): reveal must not escalate', async () => {
    const m = await mailbox();
    const in30d = new Date(clock.now().getTime() + 30 * DAY);
    const narrow = (
      await server.api(m.token).post(BASE, { tokenName: 'n', scopes: ['TokenManage'], expiresAtTs: in30d.getTime() })
    ).body.data;
    const wide = (
      await server.api(m.token).post(BASE, { tokenName: 'w', scopes: ['MailboxSend'], expiresAtTs: in30d.getTime() })
    ).body.data;
    const longer = await mintToken(server, {
      kind: 'mailbox',
      domainId: m.domainId,
      mailboxId: m.mailboxId,
      scopes: ['TokenManage'],
      expiresAt: new Date(in30d.getTime() + DAY),
    });
    expect((await server.api(narrow.accessToken).post(`${BASE}/${wide.tokenId}/reveal`)).status).toBe(403);
    expect((await server.api(narrow.accessToken).post(`${BASE}/${longer.tokenId}/reveal`)).status).toBe(403);
    expect((await server.api(m.token).post(`${BASE}/${wide.tokenId}/reveal`)).status).toBe(200);
  });

  it('refuses to disable or delete a later token wider than the caller (403); the target keeps working', async () => {
    const m = await mailbox();
    const narrow = (await server.api(m.token).post(BASE, { tokenName: 'n', scopes: ['TokenManage'] })).body.data;
    const wide = (
      await server.api(m.domainToken).post(`/api/domain/mailboxes/${m.mailboxId}/access-tokens`, {
        tokenName: 'approver',
        scopes: ['MailboxRead', 'MailboxApprove', 'TokenManage'],
      })
    ).body.data;
    const disable = await server.api(narrow.accessToken).post(`${BASE}/${wide.tokenId}/disable`);
    expect(disable.status).toBe(403);
    expect(disable.body).toMatchObject({ errorCode: 'SCOPE_MISSING' });
    expect(disable.body.errMsg).toContain('MailboxRead, MailboxApprove');
    const remove = await server.api(narrow.accessToken).delete(`${BASE}/${wide.tokenId}`);
    expect(remove.status).toBe(403);
    expect((await server.api(wide.accessToken).get('/api/messages')).status).toBe(200);
    // Within its scopes it governs: a later TokenManage-only token, and itself.
    const peer = (await server.api(m.token).post(BASE, { tokenName: 'p', scopes: ['TokenManage'] })).body.data;
    expect((await server.api(narrow.accessToken).post(`${BASE}/${peer.tokenId}/disable`)).status).toBe(200);
    expect((await server.api(narrow.accessToken).delete(`${BASE}/${peer.tokenId}`)).status).toBe(200);
    // The domain governs every token of the mailbox.
    expect(
      (await server.api(m.domainToken).delete(`/api/domain/mailboxes/${m.mailboxId}/access-tokens/${wide.tokenId}`))
        .status,
    ).toBe(200);
  });

  it('disables: returns the record, the token then answers 401 and is no longer revealable (409)', async () => {
    const m = await mailbox();
    const created = (await server.api(m.token).post(BASE, { tokenName: 'd', scopes: ['MailboxRead', 'TokenManage'] }))
      .body.data;
    const before = (await server.api(m.token).get(BASE)).body.data.find((t: any) => t.tokenId === created.tokenId);
    expect(before.canRevealPlaintext).toBe(true);
    const res = await server.api(m.token).post(`${BASE}/${created.tokenId}/disable`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      tokenId: created.tokenId,
      disabledAtTs: clock.now().getTime(),
      canRevealPlaintext: false,
    });
    expect((await server.api(created.accessToken).get(BASE)).status).toBe(401);
    const reveal = await server.api(m.token).post(`${BASE}/${created.tokenId}/reveal`);
    expect(reveal.status).toBe(409);
    expect(reveal.body).toMatchObject({ data: null, code: 409 });
    const again = await server.api(m.token).post(`${BASE}/${created.tokenId}/disable`);
    expect(again.body.data.disabledAtTs).toBe(res.body.data.disabledAtTs);
  });

  it('deletes: {tokenId, deleted:true}, the token answers 401 and the record is gone', async () => {
    const m = await mailbox();
    const created = (await server.api(m.token).post(BASE, { tokenName: 'x', scopes: ['MailboxRead', 'TokenManage'] }))
      .body.data;
    const res = await server.api(m.token).delete(`${BASE}/${created.tokenId}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ tokenId: created.tokenId, deleted: true });
    expect((await server.api(created.accessToken).get(BASE)).status).toBe(401);
    expect((await server.api(m.token).get(BASE)).body.data.map((t: any) => t.tokenId)).not.toContain(created.tokenId);
    expect(
      await server.runtime.services.db.one(sql`select id from access_token where id = ${created.tokenId}`),
    ).toBeUndefined();
    expect((await server.api(m.token).delete(`${BASE}/${created.tokenId}`)).status).toBe(404);
  });

  it('answers 404 for an unknown token id on reveal, disable and delete', async () => {
    const m = await mailbox();
    const api = server.api(m.token);
    for (const res of [
      await api.post(`${BASE}/tok_nope/reveal`),
      await api.post(`${BASE}/tok_nope/disable`),
      await api.delete(`${BASE}/tok_nope`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ data: null, code: 404 });
    }
  });
});

describe('who may self-govern', () => {
  it('refuses a domain token (403) and a mailbox token without TokenManage (403) on every route', async () => {
    const m = await mailbox();
    const noManage = await mintToken(server, {
      kind: 'mailbox',
      domainId: m.domainId,
      mailboxId: m.mailboxId,
      scopes: ['MailboxRead', 'MailboxSend'],
    });
    const target = (await server.api(m.token).post(BASE, { tokenName: 't', scopes: ['MailboxRead'] })).body.data
      .tokenId;
    for (const token of [m.domainToken, noManage.token]) {
      const api = server.api(token);
      const answers = [
        await api.get(BASE),
        await api.post(BASE, { tokenName: 'x', scopes: ['MailboxRead'] }),
        await api.post(`${BASE}/${target}/reveal`),
        await api.post(`${BASE}/${target}/disable`),
        await api.delete(`${BASE}/${target}`),
      ];
      expect(answers.map((a) => a.status)).toEqual([403, 403, 403, 403, 403]);
    }
  });

  it('answers 401 without a token', async () => {
    expect((await server.api().get(BASE)).status).toBe(401);
  });
});
