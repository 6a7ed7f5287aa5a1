import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, createScratchDatabase, ENGINE } from '../support/harness.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { upsertDomain } from '../../src/core/state/domains/domain.store.js';
import { DOMAIN_TOKEN_SCOPES } from '../../src/core/access/scopes.js';
import { range } from '../events/helpers.js';
import { connect, Recorder, subscribe } from './client.js';
import { privateRedis, serveProcess, type PrivateRedis, type ServeProcess } from '../support/processes.js';

// Two `mailbox serve --roles api,realtime,worker` processes sharing one PostgreSQL database and a
// private Redis: an event caused on either reaches subscribers on both, exactly once; replay
// covers a disconnect, a realtime process restart and a Redis restart mid-stream.
// PostgreSQL only: PGlite is one process's embedded database and cannot be shared.
let redis: PrivateRedis;
let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
let A: ServeProcess;
let B: ServeProcess;
let domain: { name: string; token: string };
let S: { address: string; token: string };
let R: { address: string; token: string; mailboxId: string };
let messageId: string;
const open: Recorder[] = [];
const track = (r: Recorder): Recorder => {
  open.push(r);
  return r;
};

describe.skipIf(ENGINE !== 'postgres')('two server processes sharing PostgreSQL and Redis', () => {
  beforeAll(async () => {
    redis = await privateRedis();
    scratch = await createScratchDatabase();
    const env = {
      DATABASE_URL: scratch.url,
      REDIS_URL: redis.url,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      SEND_RATE_LIMIT_PER_MINUTE: '100000',
      WORKER_POLL_INTERVAL: '200ms',
      DATABASE_POOL_MAX: '4',
    };
    // Migrate and mint the domain token through the core before the servers start.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-seed-'));
    const seed = await startRuntime(loadConfig({ ...env, MAILBOX_DATA_DIR: dataDir }), {
      roles: [],
      log: silentLogger,
    });
    domain = await seed.services.db.tx(async (trx) => {
      const name = `mp-${randomBytes(3).toString('hex')}.test`;
      const domainId = await upsertDomain(trx, { name });
      const t = await seed.services.tokenMinter.mint(trx, {
        kind: 'domain',
        domainId,
        mailboxId: null,
        name: 'mp',
        scopes: DOMAIN_TOKEN_SCOPES,
        expiresAt: new Date(Date.now() + 86_400_000),
        createdSource: 'resource',
        parentTokenId: null,
      });
      return { name, token: t.accessToken };
    });
    await seed.close();
    rmSync(dataDir, { recursive: true, force: true });
    [A, B] = await Promise.all([serveProcess(env), serveProcess(env)]);
    await Promise.all([A.start(), B.start()]);
    const create = async (local: string) => {
      const res = await apiClient(A.url, domain.token).post('/api/mailboxes', { address: `${local}@${domain.name}` });
      expect(res.status).toBe(201);
      return {
        address: res.body.data.mailbox.address,
        token: res.body.data.initialAccessToken,
        mailboxId: res.body.data.mailbox.mailboxId,
      };
    };
    S = await create('sender');
    R = await create('rcpt');
  }, 180_000);

  afterAll(async () => {
    for (const r of open) r.socket.close();
    await Promise.all([A?.stop(), B?.stop()]);
    await redis?.kill();
    await scratch?.drop();
  }, 60_000);

  const head = async () => Number((await apiClient(A.url, R.token).get('/api/events?limit=1')).body.data.headEventId);
  let read = false;
  /** One message.read-state event on R, caused through `server`'s HTTP API. */
  const toggle = async (server: ServeProcess) => {
    read = !read;
    const res = await apiClient(server.url, R.token).put(`/api/messages/${messageId}/read-state`, { isRead: read });
    expect(res.status).toBe(200);
  };
  const settle = () => new Promise((r) => setTimeout(r, 300));

  it('delivers an event caused on one process to subscribers on both, once each', async () => {
    const onA = track(await subscribe(A.url, { auth: { token: domain.token, mailboxAddress: R.address } }));
    const onB = track(await subscribe(B.url, { auth: { token: R.token } }));
    const sent = await apiClient(A.url, S.token).post('/api/messages/send', {
      toAddress: R.address,
      subject: 'across processes',
      bodyText: 'hi',
    });
    expect(sent.status).toBe(202);
    for (const rec of [onA, onB])
      await rec.until(() => rec.events.some((e) => e.type === 'message.received'), 10_000, 'message.received');
    messageId = onB.events.find((e) => e.type === 'message.received')!.data.messageId as string;
    await toggle(B); // caused on B, seen on A too
    for (const rec of [onA, onB]) await rec.until(() => rec.events.length === 2, 5000, 'read-state');
    await settle();
    for (const rec of [onA, onB]) {
      expect(rec.events.map((e) => e.type)).toEqual(['message.received', 'message.read-state']);
      expect(rec.seqs()).toEqual([1, 2]);
    }
  });

  it('replays what a client missed while disconnected, on the other process', async () => {
    const first = await subscribe(A.url, { auth: { token: R.token } });
    const last = Number((await first.ready()).lastEventId);
    first.socket.close();
    for (let i = 0; i < 3; i++) await toggle(A);
    const again = track(await subscribe(B.url, { auth: { token: R.token, lastEventId: last } }));
    expect(again.seqs()).toEqual(range(last + 1, last + 3));
  });

  it('replays across a realtime process restart', async () => {
    const rec = track(await subscribe(B.url, { auth: { token: R.token }, reconnection: true }));
    await toggle(A);
    await rec.until(() => rec.events.length === 1, 5000);
    const from = rec.seqs()[0]!;
    await B.stop();
    for (let i = 0; i < 4; i++) await toggle(A);
    await B.start();
    await rec.ready(2, 20_000);
    await toggle(A);
    await rec.until(() => rec.events.length === 6, 10_000, 'six events');
    expect(rec.seqs()).toEqual(range(from, from + 5));
  }, 60_000);

  it('loses no event when Redis restarts mid-stream (healed from the log, and after replay)', async () => {
    const live = track(await subscribe(B.url, { auth: { token: R.token } }));
    const away = track(await subscribe(A.url, { auth: { token: R.token }, reconnection: true }));
    const start = Number((await live.ready()).lastEventId);
    /** Writes events on A for `ms`, counting them. */
    const write = async (ms: number) => {
      let n = 0;
      for (const until = Date.now() + ms; Date.now() < until; n++) await toggle(A);
      return n;
    };
    expect(await write(300)).toBeGreaterThan(0);
    away.socket.disconnect(); // misses the outage entirely; comes back with lastEventId
    const killed = redis.kill();
    const during = await write(1000);
    await killed;
    await redis.start();
    const after = await write(500);
    away.socket.connect();
    const end = await head();
    expect(during).toBeGreaterThan(3);
    expect(after).toBeGreaterThan(0);
    for (const [name, rec] of [
      ['live', live],
      ['reconnected', away],
    ] as const) {
      await rec.until(() => rec.seqs().at(-1) === end, 15_000, `${name} at ${end}`);
      expect(rec.seqs(), name).toEqual(range(rec.seqs()[0]!, end));
    }
    expect(live.seqs()[0]).toBe(start + 1);
  }, 60_000);

  it('refuses on every replica alike', async () => {
    for (const server of [A, B]) {
      const socket = connect(server.url, { auth: { token: domain.token } });
      const data = await new Promise<{ code: number }>((resolve) =>
        socket.once('connect_error', (e: Error & { data?: { code: number } }) => resolve(e.data ?? { code: 0 })),
      );
      socket.close();
      expect(data.code).toBe(400);
    }
  });
});
