import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, createScratchDatabase, ENGINE, startTestServer } from '../support/harness.js';
import { privateRedis, type PrivateRedis } from '../support/processes.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { upsertDomain } from '../../src/core/state/domains/domain.store.js';
import { DOMAIN_TOKEN_SCOPES } from '../../src/core/access/scopes.js';

// The in-memory change sequences behind ETags (docs/api.md, "Change marks and ETags") across
// replicas: two runtimes (two pools, two Redis buses) on one PostgreSQL database and a private
// Redis. Sequences live 10 minutes here, so only the bus can make a replica see a change.
// PostgreSQL only: PGlite is one process's embedded database and cannot be shared.
const LIST = '/api/messages?limit=5';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(20)) if (await check()) return;
  throw new Error(`timed out waiting for ${what}`);
}

describe.skipIf(ENGINE !== 'postgres')('change marks on two replicas sharing PostgreSQL and Redis', () => {
  let redis: PrivateRedis;
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let sql: pg.Client;
  const runtimes: Runtime[] = [];
  const dirs: string[] = [];
  let A: Runtime;
  let B: Runtime;
  let mailbox: { address: string; token: string; mailboxId: string };

  const start = async (env: Record<string, string>) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-replica-'));
    dirs.push(dataDir);
    const runtime = await startRuntime(
      loadConfig({ ...env, PORT: '0', HOST: '127.0.0.1', MAILBOX_DATA_DIR: dataDir }),
      { roles: ['api'], log: silentLogger },
    );
    runtimes.push(runtime);
    return runtime;
  };
  const api = (r: Runtime) => apiClient(`http://127.0.0.1:${r.httpPort}`, mailbox.token);
  const poll = (r: Runtime, etag: string) => api(r).get(LIST, { 'if-none-match': etag });
  /** The ETag of the list on `r`, answered 304 on a second read (so `r` remembers the sequence). */
  const warmEtag = async (r: Runtime) => {
    const res = await api(r).get(LIST);
    expect(res.status).toBe(200);
    const etag = res.headers.get('etag')!;
    expect((await poll(r, etag)).status).toBe(304);
    return etag;
  };
  /** Bumps the sequence in the database only: a change no bus announces. */
  const unannouncedChange = () =>
    sql.query('update mailbox set event_seq = event_seq + 1 where id = $1', [mailbox.mailboxId]);

  beforeAll(async () => {
    redis = await privateRedis();
    scratch = await createScratchDatabase();
    sql = new pg.Client({ connectionString: scratch.url });
    const env = {
      DATABASE_URL: scratch.url,
      REDIS_URL: redis.url,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      DATABASE_POOL_MAX: '3',
      CHANGE_SEQUENCE_MAX_AGE: '10m',
      AUTH_FAILURES_PER_15M: '1000000',
    };
    A = await start(env);
    B = await start(env);
    await sql.connect();
    const domain = await A.services.db.tx(async (trx) => {
      const name = `rep-${randomBytes(3).toString('hex')}.test`;
      const domainId = await upsertDomain(trx, { name });
      const t = await A.services.tokenMinter.mint(trx, {
        kind: 'domain',
        domainId,
        mailboxId: null,
        name: 'replicas',
        scopes: DOMAIN_TOKEN_SCOPES,
        expiresAt: new Date(Date.now() + 86_400_000),
        createdSource: 'resource',
        parentTokenId: null,
      });
      return { name, token: t.accessToken };
    });
    const created = await apiClient(`http://127.0.0.1:${A.httpPort}`, domain.token).post('/api/mailboxes', {
      address: `reader@${domain.name}`,
    });
    expect(created.status).toBe(201);
    mailbox = {
      address: created.body.data.mailbox.address,
      token: created.body.data.initialAccessToken,
      mailboxId: created.body.data.mailbox.mailboxId,
    };
    await until('both buses listening', () => A.services.bus.listening && B.services.bus.listening);
  });
  afterAll(async () => {
    for (const r of runtimes) await r.close();
    await sql?.end();
    await scratch?.drop();
    await redis?.kill();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('keeps sequences in memory on both replicas (Redis connects them)', async () => {
    expect(A.services.changeSequences.cached).toBe(true);
    expect(B.services.changeSequences.cached).toBe(true);
    // Proof that B answers from memory: a change no bus announced is not seen.
    const etag = await warmEtag(B);
    await unannouncedChange();
    expect((await poll(B, etag)).status).toBe(304);
  });

  it('never answers 304 on B for the mark before a change made on A, once the bus delivered it', async () => {
    for (let i = 0; i < 10; i++) {
      const before = await warmEtag(B);
      const delivered = new Promise<void>((resolve) => {
        const stop = B.services.bus.subscribe((event) => {
          if (event.mailboxId !== mailbox.mailboxId) return;
          stop();
          resolve();
        });
      });
      const sent = await api(A).post('/api/messages/send', {
        toAddress: 'someone@elsewhere.example',
        subject: `change ${i}`,
        bodyText: 'x',
      });
      expect(sent.status).toBe(202);
      await delivered;
      const after = await poll(B, before);
      expect(after.status).toBe(200);
      expect(after.body.data.items[0].subject).toBe(`change ${i}`);
      expect(after.headers.get('etag')).not.toBe(before);
      // And A, which made the change, never answers 304 for the old mark either (its own publish).
      expect((await poll(A, before)).status).toBe(200);
    }
  });

  it('reads the database while Redis is gone, and forgets everything when the bus is back', async () => {
    const etag = await warmEtag(B);
    await redis.kill();
    await until('B to notice Redis is gone', () => !B.services.bus.listening);
    await unannouncedChange();
    // Not listening: whatever was announced meanwhile may be lost, so B asks the database.
    const during = await poll(B, etag);
    expect(during.status).toBe(200);
    const duringEtag = during.headers.get('etag')!;
    await redis.start();
    await until('B to listen again', () => B.services.bus.listening);
    const remembered = await warmEtag(B);
    expect(remembered).toBe(duringEtag);
    // A resume empties the memory: a change made while nothing was announced is seen at once.
    await unannouncedChange();
    const resumed = new Promise<void>((resolve) => {
      const stop = B.services.bus.onResume(() => {
        stop();
        resolve();
      });
    });
    await redis.kill();
    await redis.start();
    await resumed;
    expect((await poll(B, remembered)).status).toBe(200);
  });
});

describe('where change sequences are kept in memory', () => {
  // The harness's server: this project's engine, no Redis.
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it.runIf(ENGINE === 'postgres')('PostgreSQL without Redis: never, every poll reads the sequence', async () => {
    expect(server.runtime.services.changeSequences.cached).toBe(false);
    const domain = await server.createDomain();
    const m = await server.createMailbox(domain.token, `r@${domain.name}`);
    const first = await server.api(m.token).get(LIST);
    const etag = first.headers.get('etag')!;
    expect((await server.api(m.token).get(LIST, { 'if-none-match': etag })).status).toBe(304);
    // Another process without a bus between them made a change: this one must see it.
    const sql = new pg.Client({ connectionString: server.databaseUrl });
    await sql.connect();
    await sql.query('update mailbox set event_seq = event_seq + 1 where id = $1', [m.mailboxId]);
    await sql.end();
    expect((await server.api(m.token).get(LIST, { 'if-none-match': etag })).status).toBe(200);
  });

  it.runIf(ENGINE === 'pglite')(
    'PGlite (one process, in-process bus): always, and a change is seen at once',
    async () => {
      expect(server.runtime.services.changeSequences.cached).toBe(true);
      const domain = await server.createDomain();
      const m = await server.createMailbox(domain.token, `r@${domain.name}`);
      const etag = (await server.api(m.token).get(LIST)).headers.get('etag')!;
      expect((await server.api(m.token).get(LIST, { 'if-none-match': etag })).status).toBe(304);
      const sent = await server.api(m.token).post('/api/messages/send', {
        toAddress: 'someone@elsewhere.example',
        subject: 'seen at once',
        bodyText: 'x',
      });
      expect(sent.status).toBe(202);
      const after = await server.api(m.token).get(LIST, { 'if-none-match': etag });
      expect(after.status).toBe(200);
      expect(after.body.data.items[0].subject).toBe('seen at once');
    },
  );
});
