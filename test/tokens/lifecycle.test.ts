import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { ManualClock } from '../support/tenants.js';
import { sql } from '../../src/storage/database.js';

// Time-driven token states: the reveal window closing, expiry, usage stamps and the sweeper.
// The server runs on a manual clock with a one-hour reveal window, and tests move it forward.

const HOUR = 3_600_000;
const BASE = '/api/mailbox/access-tokens';
let server: TestServer;
const clock = new ManualClock();

beforeAll(async () => {
  server = await startTestServer({ clock, env: { TOKEN_REVEAL_WINDOW: '1h' } });
});
afterAll(async () => {
  await server?.close();
});

async function mailboxWithChild(body: Record<string, unknown> = {}) {
  const d = await server.createDomain();
  const m = await server.createMailbox(d.token, `m@${d.name}`);
  const child = (
    await server.api(m.token).post(BASE, { tokenName: 'child', scopes: ['MailboxRead', 'TokenManage'], ...body })
  ).body.data;
  return { m, child };
}

const record = async (token: string, tokenId: string) =>
  (await server.api(token).get(BASE)).body.data.find((t: any) => t.tokenId === tokenId);
const cipherOf = async (tokenId: string) =>
  (await server.runtime.services.db.one(
    sql<{ plaintext_cipher: string | null }>`select plaintext_cipher from access_token where id = ${tokenId}`,
  ))!.plaintext_cipher;

describe('reveal window (TOKEN_REVEAL_WINDOW)', () => {
  it('reveals just inside the window and answers 409 once it has passed', async () => {
    const { m, child } = await mailboxWithChild();
    clock.advance(HOUR - 1);
    expect((await server.api(m.token).post(`${BASE}/${child.tokenId}/reveal`)).status).toBe(200);
    clock.advance(1);
    const res = await server.api(m.token).post(`${BASE}/${child.tokenId}/reveal`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ data: null, code: 409 });
    expect((await record(m.token, child.tokenId)).canRevealPlaintext).toBe(false);
    // The token itself still works: only its plaintext is gone.
    expect((await server.api(child.accessToken).get(BASE)).status).toBe(200);
  });

  it('the sweeper erases the ciphertext after the window, and only then', async () => {
    const { child } = await mailboxWithChild();
    await server.runtime.services.tokens.sweepExpiredCiphertext();
    expect(await cipherOf(child.tokenId)).toMatch(/^v1\./);
    clock.advance(HOUR + 1);
    expect(await server.runtime.services.tokens.sweepExpiredCiphertext()).toBeGreaterThanOrEqual(1);
    expect(await cipherOf(child.tokenId)).toBeNull();
  });

  it('disabling erases the ciphertext at once', async () => {
    const { m, child } = await mailboxWithChild();
    await server.api(m.token).post(`${BASE}/${child.tokenId}/disable`);
    expect(await cipherOf(child.tokenId)).toBeNull();
  });
});

describe('expiry', () => {
  it('an expired token answers 401, and its record keeps expiresAtTs', async () => {
    const { m, child } = await mailboxWithChild({ expiresAtTs: clock.now().getTime() + 2 * HOUR });
    expect((await server.api(child.accessToken).get(BASE)).status).toBe(200);
    clock.advance(2 * HOUR);
    const res = await server.api(child.accessToken).get(BASE);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ data: null, code: 401 });
    expect((await record(m.token, child.tokenId)).expiresAtTs).toBe(child.expiresAtTs);
  });
});

describe('usage', () => {
  it('records lastUsedAtTs and lastUsedRemoteIp after use (flushed in batches)', async () => {
    const { m, child } = await mailboxWithChild();
    expect(await record(m.token, child.tokenId)).toMatchObject({ lastUsedAtTs: null, lastUsedRemoteIp: null });
    clock.advance(5000);
    const usedAt = clock.now().getTime();
    await server.api(child.accessToken).get(BASE);
    clock.advance(5000);
    await server.runtime.services.usage.flush();
    const rec = await record(m.token, child.tokenId);
    expect(rec.lastUsedAtTs).toBe(usedAt);
    expect(rec.lastUsedRemoteIp).toMatch(/127\.0\.0\.1|::1/);
  });
});
