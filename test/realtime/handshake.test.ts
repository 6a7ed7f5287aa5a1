import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { ENGINE, PG_ADMIN_URL, REDIS_TEST_URL, startTestServer, type TestServer } from '../support/harness.js';
import { createTenants, mintToken, type Tenants } from '../support/tenants.js';
import { mintTokenPlaintext } from '../../src/core/access/token-format.js';
import { MAILBOX_TOKEN_SCOPES } from '../../src/core/access/scopes.js';
import { connect, refusal, Recorder, subscribe } from './client.js';

// Every way into /hubs/mailbox-events and every way to be refused (docs/contract.md, Real-time; spec,
// token table). PGlite runs the in-process bus, PostgreSQL runs with Redis (bus and adapter).
let server: TestServer;
let t: Tenants;
const open: Array<{ socket: { close(): void } }> = [];
const track = <T extends { socket: { close(): void } }>(r: T): T => {
  open.push(r);
  return r;
};

beforeAll(async () => {
  server = await startTestServer({
    roles: ['api', 'realtime'],
    env: {
      REALTIME_ALLOWED_ORIGINS: 'https://app.example',
      ...(ENGINE === 'postgres' ? { REDIS_URL: REDIS_TEST_URL } : {}),
    },
  });
  t = await createTenants(server);
});
afterAll(async () => {
  for (const r of open) r.socket.close();
  await server?.close();
});

const now = () => server.runtime.services.clock.now().getTime();

describe('handshake: accepted', () => {
  it('binds a mailbox token without mailboxAddress to its own mailbox', async () => {
    const rec = track(await subscribe(server.url, { auth: { token: t.A1.token } }));
    expect(await rec.ready()).toEqual({
      mailboxId: t.A1.mailboxId,
      mailboxAddress: t.A1.address,
      lastEventId: expect.any(String),
    });
  });

  it('accepts the token in the Authorization header and a mailbox token naming its own mailbox', async () => {
    const rec = track(
      await subscribe(server.url, {
        headers: { authorization: `Bearer ${t.A1.token}` },
        auth: { mailboxAddress: t.A1.address.toUpperCase() },
      }),
    );
    expect((await rec.ready()).mailboxId).toBe(t.A1.mailboxId);
  });

  it('binds a domain token to the mailbox it names', async () => {
    const rec = track(await subscribe(server.url, { auth: { token: t.X.token, mailboxAddress: t.A2.address } }));
    expect((await rec.ready()).mailboxId).toBe(t.A2.mailboxId);
  });

  it('allows same-origin and listed origins', async () => {
    const host = new URL(server.url).host;
    for (const origin of [`http://${host}`, 'https://app.example']) {
      const rec = track(await subscribe(server.url, { auth: { token: t.A1.token }, headers: { origin } }));
      expect((await rec.ready()).mailboxId).toBe(t.A1.mailboxId);
    }
  });
});

describe('handshake: refused with connect_error { code, errMsg }', () => {
  const cases: Array<
    [
      string,
      () => Promise<{
        auth?: Record<string, unknown>;
        headers?: Record<string, string>;
        query?: Record<string, string>;
      }>,
      number,
    ]
  > = [
    ['no token', async () => ({}), 401],
    ['a malformed token', async () => ({ auth: { token: 'nope' } }), 401],
    ['an unknown well-formed token', async () => ({ auth: { token: mintTokenPlaintext('mailbox') } }), 401],
    ['a malformed Authorization header', async () => ({ headers: { authorization: 'Basic abc' } }), 401],
    [
      'a disabled token',
      async () => ({
        auth: {
          token: (
            await mintToken(server, {
              kind: 'mailbox',
              domainId: t.X.domainId,
              mailboxId: t.A1.mailboxId,
              disabled: true,
            })
          ).token,
        },
      }),
      401,
    ],
    [
      'an expired token',
      async () => ({
        auth: {
          token: (
            await mintToken(server, {
              kind: 'mailbox',
              domainId: t.X.domainId,
              mailboxId: t.A1.mailboxId,
              expiresAt: new Date(now() - 1000),
            })
          ).token,
        },
      }),
      401,
    ],
    ['a domain token without mailboxAddress', async () => ({ auth: { token: t.X.token } }), 400],
    [
      'a mailbox token naming another mailbox',
      async () => ({ auth: { token: t.A1.token, mailboxAddress: t.A2.address } }),
      400,
    ],
    ['an invalid mailboxAddress', async () => ({ auth: { token: t.A1.token, mailboxAddress: 'not an address' } }), 400],
    ['an invalid lastEventId', async () => ({ auth: { token: t.A1.token, lastEventId: 'abc' } }), 400],
    ['a negative lastEventId', async () => ({ auth: { token: t.A1.token, lastEventId: -1 } }), 400],
    [
      'a token without MailboxRead',
      async () => ({
        auth: {
          token: (
            await mintToken(server, {
              kind: 'mailbox',
              domainId: t.X.domainId,
              mailboxId: t.A1.mailboxId,
              scopes: MAILBOX_TOKEN_SCOPES.filter((s) => s !== 'MailboxRead'),
            })
          ).token,
        },
      }),
      403,
    ],
    [
      'a domain token without MailboxRead',
      async () => ({
        auth: {
          token: (
            await mintToken(server, { kind: 'domain', domainId: t.X.domainId, scopes: ['DomainManage', 'MailboxSend'] })
          ).token,
          mailboxAddress: t.A1.address,
        },
      }),
      403,
    ],
    [
      'a domain token naming an unknown mailbox',
      async () => ({ auth: { token: t.X.token, mailboxAddress: `ghost@${t.X.name}` } }),
      404,
    ],
    [
      "a domain token naming another domain's mailbox",
      async () => ({ auth: { token: t.Y.token, mailboxAddress: t.A1.address } }),
      404,
    ],
    [
      'a foreign Origin',
      async () => ({ auth: { token: t.A1.token }, headers: { origin: 'https://evil.example' } }),
      403,
    ],
    ['a "null" Origin', async () => ({ auth: { token: t.A1.token }, headers: { origin: 'null' } }), 403],
    ['a token in the URL query', async () => ({ query: { token: t.A1.token } }), 400],
    [
      'a token in the URL even with a valid one in auth',
      async () => ({ auth: { token: t.A1.token }, query: { access_token: t.A1.token } }),
      400,
    ],
    [
      'a token-shaped value under any query key',
      async () => ({ auth: { token: t.A1.token }, query: { x: t.A1.token } }),
      400,
    ],
  ];
  for (const [name, build, code] of cases) {
    it(`${name}: ${code}`, async () => {
      const data = await refusal(connect(server.url, await build()));
      expect(data.code).toBe(code);
      expect((data as { errorCode?: string }).errorCode).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(data.errMsg).toEqual(expect.any(String));
      expect(data.errMsg.length).toBeGreaterThan(3);
    });
  }

  it('never echoes the token in the refusal', async () => {
    const data = await refusal(connect(server.url, { query: { token: t.A1.token } }));
    expect(JSON.stringify(data)).not.toContain(t.A1.token);
  });
});

// A real outage (no patched storage), as in test/smtp/submission-limits.test.ts. PostgreSQL only:
// PGlite lives inside the process. docs/contract.md: a storage outage is connect_error {code: 503}.
describe.runIf(ENGINE === 'postgres')('handshake during a storage outage', () => {
  it('is connect_error { code: 503, errorCode: UNAVAILABLE }, and connects again once it is back', async () => {
    // A token never used, so no auth cache holds it and the handshake has to read the database.
    const fresh = await mintToken(server, { kind: 'mailbox', domainId: t.X.domainId, mailboxId: t.A2.mailboxId });
    const name = new URL(server.databaseUrl!).pathname.slice(1);
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(`alter database ${name} allow_connections false`);
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name]);
      const data = await refusal(connect(server.url, { auth: { token: fresh.token } }));
      expect(data).toMatchObject({ code: 503, errorCode: 'UNAVAILABLE' });
    } finally {
      await admin.query(`alter database ${name} allow_connections true`);
      await admin.end();
    }
    const rec = track(await subscribe(server.url, { auth: { token: fresh.token } }));
    expect((await rec.ready()).mailboxId).toBe(t.A2.mailboxId);
  });
});

describe('revocation while connected: disconnected within a second', () => {
  const closedWithin = async (rec: Recorder, act: () => Promise<unknown>): Promise<number> => {
    const disconnected = new Promise<number>((resolve) => rec.socket.once('disconnect', () => resolve(Date.now())));
    const start = Date.now();
    await act();
    const at = await Promise.race([
      disconnected,
      new Promise<number>((_, reject) => setTimeout(() => reject(new Error('still connected after 3 s')), 3000)),
    ]);
    expect(rec.named('subscription.closed').at(-1)).toEqual({
      code: 401,
      errorCode: 'ACCESS_REVOKED',
      errMsg: expect.any(String),
    });
    return at - start;
  };
  const manager = () =>
    mintToken(server, {
      kind: 'mailbox',
      domainId: t.X.domainId,
      mailboxId: t.A1.mailboxId,
      scopes: MAILBOX_TOKEN_SCOPES,
    });
  /** A MailboxRead token of A1: the one each test below takes away. */
  const reader = (expiresAt?: Date) =>
    mintToken(server, {
      kind: 'mailbox',
      domainId: t.X.domainId,
      mailboxId: t.A1.mailboxId,
      scopes: ['MailboxRead'],
      ...(expiresAt ? { expiresAt } : {}),
    });

  it('disables', async () => {
    // The manager first: self-governance sees only tokens created at or after the caller.
    const m = await manager();
    const target = await reader();
    const rec = track(await subscribe(server.url, { auth: { token: target.token } }));
    const ms = await closedWithin(rec, async () => {
      expect((await server.api(m.token).post(`/api/mailbox/access-tokens/${target.tokenId}/disable`)).status).toBe(200);
    });
    expect(ms).toBeLessThan(1000);
  });

  it('deletes (domain route)', async () => {
    const target = await reader();
    const rec = track(await subscribe(server.url, { auth: { token: target.token } }));
    const ms = await closedWithin(rec, async () => {
      expect(
        (await server.api(t.X.token).delete(`/api/domain/mailboxes/${t.A1.mailboxId}/access-tokens/${target.tokenId}`))
          .status,
      ).toBe(200);
    });
    expect(ms).toBeLessThan(1000);
  });

  it('expires', async () => {
    const expiresAt = new Date(now() + 1500);
    const target = await reader(expiresAt);
    const rec = track(await subscribe(server.url, { auth: { token: target.token } }));
    const at = await new Promise<number>((resolve) => rec.socket.once('disconnect', () => resolve(Date.now())));
    expect(at - expiresAt.getTime()).toBeLessThan(1000);
    expect(at).toBeGreaterThanOrEqual(expiresAt.getTime());
  });

  it('cuts every socket of the token, and no socket of another token on the same mailbox', async () => {
    const m = await manager();
    const target = await reader();
    // The hub asks about each (token, mailbox) once per tick, however many sockets share it.
    const cut = [
      track(await subscribe(server.url, { auth: { token: target.token } })),
      track(await subscribe(server.url, { auth: { token: target.token } })),
    ];
    const kept = track(await subscribe(server.url, { auth: { token: m.token } }));
    const gone = cut.map((rec) => new Promise<void>((resolve) => rec.socket.once('disconnect', () => resolve())));
    expect((await server.api(m.token).post(`/api/mailbox/access-tokens/${target.tokenId}/disable`)).status).toBe(200);
    await Promise.race([
      Promise.all(gone),
      new Promise((_, reject) => setTimeout(() => reject(new Error('still connected after 3 s')), 3000)),
    ]);
    for (const rec of cut)
      expect(rec.named('subscription.closed').at(-1)).toMatchObject({ errorCode: 'ACCESS_REVOKED' });
    await new Promise((r) => setTimeout(r, 1200)); // two more ticks
    expect({ connected: kept.socket.connected, closed: kept.named('subscription.closed') }).toEqual({
      connected: true,
      closed: [],
    });
  });

  it('keeps sockets whose tokens stay valid', async () => {
    const rec = track(await subscribe(server.url, { auth: { token: t.A2.token } }));
    // Why it went, if it did (seen once under CI load, never alone): the client's reason and any
    // subscription.closed payload land in the failure message.
    let reason: string | null = null;
    rec.socket.once('disconnect', (r: string) => (reason = r));
    await new Promise((r) => setTimeout(r, 1200));
    expect({ connected: rec.socket.connected, reason, closed: rec.named('subscription.closed') }).toEqual({
      connected: true,
      reason: null,
      closed: [],
    });
  });
});
