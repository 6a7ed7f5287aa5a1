import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { mintToken, setMailboxPassword } from '../support/tenants.js';
import { boundClient } from '../reliability/support/client-address.js';
import { DEFAULT_INTEGRATION_SCOPES } from '../../src/core/access/scopes.js';

// Password login (spec rules 1–3, docs/contract.md, docs/trust.md): reuse a revealable token that
// login or bootstrap created with exactly the default integration scopes, else mint one; wrong password and unknown mailbox are the same 401;
// repeated failures per (mailbox, client address) are throttled (LOGIN_FAILURES_PER_15M, here 3).

const LOGIN = '/api/mailbox/auth/login/password';
const PASSWORD = 'correct horse battery staple';
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { LOGIN_FAILURES_PER_15M: '3', LOGIN_ACCOUNT_SLOWDOWN: '300ms' } });
});
afterAll(async () => {
  await server?.close();
});

async function mailbox(local = 'm') {
  const d = await server.createDomain();
  const m = await server.createMailbox(d.token, `${local}@${d.name}`);
  await setMailboxPassword(server, m.mailboxId, PASSWORD);
  return { d, m, domainApi: server.api(d.token) };
}
const login = (mailboxAddress: string, password = PASSWORD) => server.api().post(LOGIN, { mailboxAddress, password });
const disable = (domainToken: string, mailboxId: string, tokenId: string) =>
  server.api(domainToken).post(`/api/domain/mailboxes/${mailboxId}/access-tokens/${tokenId}/disable`);

describe('POST /api/mailbox/auth/login/password', () => {
  it('reuses the revealable bootstrap token (rule 1): it covers the default scopes', async () => {
    const { m } = await mailbox();
    const res = await login(m.address);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body.data).toMatchObject({
      tokenId: m.tokenId,
      accessToken: m.token,
      reused: true,
      mailboxId: m.mailboxId,
      mailboxAddress: m.address,
    });
  });

  it('mints a default-scope token when none is reusable (rule 2), then reuses it', async () => {
    const { d, m } = await mailbox();
    await disable(d.token, m.mailboxId, m.tokenId);
    const first = await login(m.address.toUpperCase()); // addresses are case-insensitive
    expect(first.status).toBe(200);
    const data = first.body.data;
    expect(Object.keys(data).sort()).toEqual([
      'accessToken',
      'expiresAtTs',
      'mailboxAddress',
      'mailboxId',
      'reused',
      'scopes',
      'tokenId',
      'tokenPrefix',
    ]);
    expect(data).toMatchObject({
      reused: false,
      scopes: [...DEFAULT_INTEGRATION_SCOPES],
      mailboxId: m.mailboxId,
      mailboxAddress: m.address,
    });
    expect(data.tokenId).not.toBe(m.tokenId);
    expect(data.tokenPrefix).toBe(data.accessToken.slice(0, 12));
    expect(data.expiresAtTs).toBeGreaterThan(Date.now() + 89 * 86_400_000);
    // A mailbox token usable on the HTTP API, recorded as created by login.
    const listed = await server.api(data.accessToken).get('/api/mailbox/access-tokens');
    expect(listed.status).toBe(200);
    expect(listed.body.data.find((t: any) => t.tokenId === data.tokenId).createdSource).toBe('login');

    const second = await login(m.address);
    expect(second.body.data).toMatchObject({ tokenId: data.tokenId, accessToken: data.accessToken, reused: true });

    await disable(d.token, m.mailboxId, data.tokenId);
    const third = await login(m.address);
    expect(third.body.data.reused).toBe(false);
    expect(third.body.data.tokenId).not.toBe(data.tokenId);
  });

  it('does not reuse a token that lacks part of the default scopes', async () => {
    const { d, m } = await mailbox();
    await disable(d.token, m.mailboxId, m.tokenId);
    const narrow = await mintToken(server, {
      kind: 'mailbox',
      domainId: d.domainId,
      mailboxId: m.mailboxId,
      scopes: ['MailboxRead', 'MailboxSend'],
    });
    const res = await login(m.address);
    expect(res.body.data.reused).toBe(false);
    expect(res.body.data.tokenId).not.toBe(narrow.tokenId);
  });

  it('never hands out a wider token: an approver token a domain admin minted is not reused, a new one is minted', async () => {
    const { d, m, domainApi } = await mailbox();
    await disable(d.token, m.mailboxId, m.tokenId);
    const approver = await domainApi.post(`/api/domain/mailboxes/${m.mailboxId}/access-tokens`, {
      tokenName: 'approver',
      scopes: [...DEFAULT_INTEGRATION_SCOPES, 'MailboxApprove', 'WebhookManage'],
    });
    expect(approver.status).toBe(201);
    const res = await login(m.address);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ reused: false, scopes: [...DEFAULT_INTEGRATION_SCOPES] });
    expect(res.body.data.tokenId).not.toBe(approver.body.data.tokenId);
    expect(res.body.data.accessToken).not.toBe(approver.body.data.accessToken);
  });

  it('reuses only what login or bootstrap created: an equal-scope token minted by a domain admin is not reused', async () => {
    const { d, m, domainApi } = await mailbox();
    await disable(d.token, m.mailboxId, m.tokenId);
    const minted = await domainApi.post(`/api/domain/mailboxes/${m.mailboxId}/access-tokens`, {
      tokenName: 'same scopes',
      scopes: [...DEFAULT_INTEGRATION_SCOPES],
    });
    expect(minted.status).toBe(201);
    const res = await login(m.address);
    expect(res.body.data.reused).toBe(false);
    expect(res.body.data.tokenId).not.toBe(minted.body.data.tokenId);
    expect((await login(m.address)).body.data).toMatchObject({ reused: true, tokenId: res.body.data.tokenId });
  });

  it('answers a wrong password, an unknown mailbox and a mailbox without password with the same 401', async () => {
    const { d, m } = await mailbox();
    const noPassword = await server.createMailbox(d.token, `nopw@${d.name}`);
    const answers = [
      await login(m.address, 'wrong password'),
      await login(`ghost@${d.name}`),
      await login(noPassword.address),
    ];
    for (const res of answers) {
      expect(res.status).toBe(401);
      expect({ ...res.body, tid: undefined }).toEqual({ ...answers[0]!.body, tid: undefined });
      expect(res.body.data).toBeNull();
    }
  });

  it('throttles repeated failures per (mailbox, client address) with 429 and Retry-After, even for the right password', async () => {
    const { m } = await mailbox('throttled');
    for (let i = 0; i < 3; i++) expect((await login(m.address, `wrong-${i}`)).status).toBe(401);
    const res = await login(m.address);
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ data: null, code: 429 });
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 900).toBe(true);
    // Unknown addresses are throttled the same way, so the 429 reveals nothing either.
    const ghost = `ghost@${m.address.split('@')[1]}`;
    for (let i = 0; i < 3; i++) await login(ghost, 'x');
    expect((await login(ghost, 'x')).status).toBe(429);
  });

  it('never refuses the right password from another client address; the attacked mailbox only slows down', async () => {
    const { m } = await mailbox('victim');
    const attacker = boundClient('127.0.0.3');
    const owner = boundClient('127.0.0.4');
    try {
      const url = `${server.url}${LOGIN}`;
      for (let i = 0; i < 5; i++)
        await attacker.request('POST', url, { json: { mailboxAddress: m.address, password: `x${i}` } });
      expect(
        (await attacker.request('POST', url, { json: { mailboxAddress: m.address, password: PASSWORD } })).status,
      ).toBe(429);
      const t0 = performance.now();
      const ok = await owner.request('POST', url, { json: { mailboxAddress: m.address, password: PASSWORD } });
      expect(ok.status).toBe(200);
      expect(ok.body.data.mailboxAddress).toBe(m.address);
      // Past LOGIN_FAILURES_PER_15M failures from all addresses, every check waits LOGIN_ACCOUNT_SLOWDOWN.
      expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    } finally {
      attacker.close();
      owner.close();
    }
  });

  it('answers 400 for an invalid address or a missing field, and needs no bearer token', async () => {
    expect((await login('not an address')).status).toBe(400);
    expect((await server.api().post(LOGIN, { mailboxAddress: 'a@b.test' })).status).toBe(400);
    const { m } = await mailbox();
    expect((await server.api('garbage').post(LOGIN, { mailboxAddress: m.address, password: PASSWORD })).status).toBe(
      200,
    );
  });
});
