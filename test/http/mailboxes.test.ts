import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe('POST /api/mailboxes', () => {
  it('creates a mailbox with a working bootstrap token (201)', async () => {
    const domain = await server.createDomain();
    const res = await server
      .api(domain.token)
      .post('/api/mailboxes', { address: `Agent@${domain.name}`, displayName: 'Agent' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const d = res.body.data;
    expect(d.mailbox).toEqual({
      mailboxId: expect.stringMatching(/^mbx_/),
      address: `agent@${domain.name}`,
      displayName: 'Agent',
      expiresAtTs: null,
    });
    expect(d.expiresAtTs).toBeNull();
    expect(d.initialAccessToken).toMatch(/^mbxm_/);
    expect(d.initialAccessTokenId).toMatch(/^tok_/);
    expect(d.initialAccessTokenExpiresAtTs).toBeGreaterThan(Date.now());
    const listed = await server.api(d.initialAccessToken).get('/api/mailbox/access-tokens');
    expect(listed.status).toBe(200);
  });

  it('accepts localPart instead of address', async () => {
    const domain = await server.createDomain();
    const res = await server.api(domain.token).post('/api/mailboxes', { localPart: 'ops', displayName: 'Ops' });
    expect(res.status).toBe(201);
    expect(res.body.data.mailbox.address).toBe(`ops@${domain.name}`);
  });

  it('answers 409 when the mailbox already exists', async () => {
    const domain = await server.createDomain();
    await server.createMailbox(domain.token, `dup@${domain.name}`);
    const res = await server.api(domain.token).post('/api/mailboxes', { address: `DUP@${domain.name}` });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ data: null, code: 409 });
  });

  it('refuses an address of another domain (403) and a mailbox token (403)', async () => {
    const a = await server.createDomain();
    const b = await server.createDomain();
    const other = await server.api(a.token).post('/api/mailboxes', { address: `x@${b.name}` });
    expect(other.status).toBe(403);
    const mailbox = await server.createMailbox(a.token, `m@${a.name}`);
    const byMailbox = await server.api(mailbox.token).post('/api/mailboxes', { address: `y@${a.name}` });
    expect(byMailbox.status).toBe(403);
  });

  it('refuses an invalid address with 400', async () => {
    const domain = await server.createDomain();
    const res = await server.api(domain.token).post('/api/mailboxes', { address: 'not an address' });
    expect(res.status).toBe(400);
    expect(res.body.errMsg).toContain('address');
  });
});
