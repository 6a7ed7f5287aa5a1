import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { apiClient, createScratchDatabase } from '../support/harness.js';
import {
  privateRedis,
  seedDomain,
  serviceProcess,
  type PrivateRedis,
  type ServiceProcess,
} from '../support/processes.js';
import { Recorder, subscribe } from '../realtime/client.js';
import { EVENT_TYPES } from '../../src/types/mailbox-event.js';
import { recordFigure, zeroFigure } from './support/figures.js';
import { scale } from './support/scale.js';

// Redis flushed and restarted mid-run: two `serve --roles api,realtime,worker`
// processes share one database and a private Redis; mail flows between hosted mailboxes through
// both (send → message.sent, local delivery by either worker → message.received and
// message.delivery) while Socket.IO clients follow every mailbox on both processes. Mid-stream
// the Redis is FLUSHALLed, then killed and started again. Nothing acknowledged may be lost, and
// every client must end with every event of its mailbox, in order, once: the live ones through
// the log heal (announcements lost with Redis), the ones away during the outage by replay
// (reconnect with lastEventId). test/realtime/multi-process.test.ts covers a plain Redis restart
// with read-state toggles; this is the run with sends, a flush and figures.

const SUITE = 'redis restart';
const MAILBOXES = scale(4, 8);
const PHASE_MS = scale(1500, 5000);
const PAUSE_MS = scale(150, 100);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isEvent = (name: string) => (EVENT_TYPES as readonly string[]).includes(name);

/** A recorder that also counts the events replayed after each reconnect (before its subscription.ready). */
function countReplays(rec: Recorder): { replayed: number } {
  const counter = { replayed: 0 };
  let replaying = false;
  rec.socket.io.on('reconnect', () => {
    replaying = true;
  });
  rec.socket.on('connect', () => {
    if (rec.named('subscription.ready').length > 0) replaying = true;
  });
  rec.socket.onAny((name: string) => {
    if (name === 'subscription.ready') replaying = false;
    else if (replaying && isEvent(name)) counter.replayed++;
  });
  return counter;
}

describe('Redis flushed and restarted under a steady stream of mail and events', () => {
  let redis: PrivateRedis | undefined;
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | undefined;
  let servers: ServiceProcess[] = [];
  let db: pg.Client | undefined;
  const recorders: Recorder[] = [];

  afterAll(async () => {
    for (const r of recorders) r.socket.close();
    await Promise.all(servers.map((s) => s.stop()));
    await redis?.kill();
    await db?.end();
    await scratch?.drop();
  }, 60_000);

  it('loses no acknowledged message and no event; clients recover by replay', async () => {
    redis = await privateRedis();
    scratch = await createScratchDatabase();
    const env = {
      DATABASE_URL: scratch.url,
      REDIS_URL: redis.url,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      WORKER_POLL_INTERVAL: '200ms',
      DATABASE_POOL_MAX: '4',
      LOG_LEVEL: 'warn',
    };
    const domain = await seedDomain(env);
    servers = await Promise.all([
      serviceProcess(env, 'api,realtime,worker'),
      serviceProcess(env, 'api,realtime,worker'),
    ]);
    await Promise.all(servers.map((s) => s.start()));
    const [A, B] = servers as [ServiceProcess, ServiceProcess];
    db = new pg.Client({ connectionString: scratch.url });
    await db.connect();

    const mailboxes: { address: string; token: string; mailboxId: string }[] = [];
    for (let i = 0; i < MAILBOXES; i++) {
      const res = await apiClient(A.url, domain.token).post('/api/mailboxes', { address: `m${i}@${domain.name}` });
      expect(res.status).toBe(201);
      mailboxes.push({
        address: res.body.data.mailbox.address,
        token: res.body.data.initialAccessToken,
        mailboxId: res.body.data.mailbox.mailboxId,
      });
    }

    // Per mailbox: a live client on each process, and one that is away during the outage.
    type Follower = { rec: Recorder; mailboxId: string; role: string; from: number; replays: { replayed: number } };
    const followers: Follower[] = [];
    for (const [i, m] of mailboxes.entries()) {
      for (const [role, server] of [
        ['live on A', A],
        ['live on B', B],
        ['away, then back', i % 2 ? A : B],
      ] as const) {
        const rec = await subscribe(server.url, { auth: { token: m.token }, reconnection: true });
        recorders.push(rec);
        const from = Number((await rec.ready()).lastEventId);
        followers.push({ rec, mailboxId: m.mailboxId, role, from, replays: countReplays(rec) });
      }
    }

    // The stream: each mailbox sends to the next, alternately through A and B.
    const acked: { id: string; at: number }[] = [];
    const refused: { status: number | string; at: number }[] = [];
    let streaming = true;
    const senders = mailboxes.map(async (m, i) => {
      const to = mailboxes[(i + 1) % mailboxes.length]!.address;
      for (let n = 0; streaming; n++) {
        const server = n % 2 ? A : B;
        try {
          const res = await apiClient(server.url, m.token).post('/api/messages/send', {
            toAddress: to,
            subject: `redis run ${i}.${n}`,
            bodyText: 'steady',
          });
          if (res.status === 202) acked.push({ id: res.body.data.messageId, at: Date.now() });
          else refused.push({ status: res.status, at: Date.now() });
        } catch (err) {
          refused.push({ status: (err as Error).message, at: Date.now() });
        }
        await sleep(PAUSE_MS);
      }
    });

    await sleep(PHASE_MS);
    const away = followers.filter((f) => f.role.startsWith('away'));
    for (const f of away) f.rec.socket.disconnect();
    const admin = new Redis(redis.url);
    const flushedAt = Date.now();
    expect(await admin.flushall()).toBe('OK');
    admin.disconnect();
    await sleep(PHASE_MS);
    const killedAt = Date.now();
    await redis.kill();
    await sleep(PHASE_MS);
    await redis.start();
    const restartedAt = Date.now();
    await sleep(PHASE_MS);
    for (const f of away) f.rec.socket.connect();
    await sleep(PHASE_MS);
    streaming = false;
    await Promise.all(senders);

    // Let both workers finish, then every client must reach its mailbox's head.
    const deadline = Date.now() + 60_000;
    while (
      Number(
        (await db.query<{ n: string }>(`select count(*) as n from outbox_job where status <> 'done'`)).rows[0]!.n,
      ) > 0 &&
      Date.now() < deadline
    )
      await sleep(200);
    const logOf = async (mailboxId: string) =>
      (
        await db!.query<{ seq: string }>(`select seq from mailbox_event where mailbox_id = $1 order by seq`, [
          mailboxId,
        ])
      ).rows.map((r) => Number(r.seq));
    const logs = new Map<string, number[]>();
    for (const m of mailboxes) logs.set(m.mailboxId, await logOf(m.mailboxId));
    await Promise.all(
      followers.map((f) =>
        f.rec
          .until(() => f.rec.seqs().at(-1) === logs.get(f.mailboxId)!.at(-1), 30_000, `${f.role} at the head`)
          .catch(() => undefined),
      ),
    );
    await sleep(500); // anything late would be a duplicate

    let missed = 0,
      duplicates = 0,
      outOfOrder = 0,
      replayed = 0,
      healedDuringOutage = 0;
    for (const f of followers) {
      const got = f.rec.seqs();
      const expected = logs.get(f.mailboxId)!.filter((s) => s > f.from);
      const seen = new Set(got);
      missed += expected.filter((s) => !seen.has(s)).length;
      duplicates += got.length - seen.size;
      outOfOrder += got.filter((s, i) => i > 0 && s <= got[i - 1]!).length;
      replayed += f.replays.replayed;
      // Committed while Redis was down: no announcement existed, a live socket got them from the log.
      if (!f.role.startsWith('away'))
        healedDuringOutage += f.rec.events.filter(
          (e) => e.occurredAtTs >= killedAt && e.occurredAtTs < restartedAt,
        ).length;
      if (missed || duplicates || outOfOrder)
        console.log(
          `[redis restart] ${f.role} ${f.mailboxId}: got ${JSON.stringify(got)} expected ${JSON.stringify(expected)}`,
        );
    }
    const ids = acked.map((a) => a.id);
    const rows = (
      await db.query<{ id: string; delivery_status: string }>(
        `select id, delivery_status from message where id = any($1)`,
        [ids],
      )
    ).rows;
    const lost = ids.length - rows.length;
    const undelivered = rows.filter((r) => r.delivery_status !== 'delivered').length;
    const during = (from: number, to: number) => ({
      acked: acked.filter((a) => a.at >= from && a.at < to).length,
      refused: refused.filter((r) => r.at >= from && r.at < to).length,
    });
    const outage = during(killedAt, restartedAt);
    const totalEvents = [...logs.values()].reduce((n, l) => n + l.length, 0);
    console.log(
      `[redis restart] ${acked.length} sends acknowledged (${outage.acked} while Redis was down), ${refused.length} refused ${JSON.stringify([...new Set(refused.map((r) => r.status))])}; ` +
        `${totalEvents} events in the log, ${followers.length} clients; flush at +${killedAt - flushedAt} ms before the kill, down ${restartedAt - killedAt} ms`,
    );

    const figures = [
      zeroFigure(SUITE, `acknowledged sends lost, of ${acked.length}`, lost),
      zeroFigure(SUITE, 'acknowledged sends not delivered to their (hosted) recipient', undelivered),
      zeroFigure(
        SUITE,
        `events missed by real-time clients after recovery (${followers.length} clients, ${totalEvents} events)`,
        missed,
      ),
      zeroFigure(SUITE, 'duplicate events received', duplicates),
      zeroFigure(SUITE, 'events received out of order', outOfOrder),
      recordFigure({
        suite: SUITE,
        name: 'events recovered by replay (clients reconnecting with lastEventId)',
        value: replayed,
        target: '> 0',
        pass: replayed > 0,
      }),
      recordFigure({
        suite: SUITE,
        name: 'events committed while Redis was down, recovered from the log by live clients',
        value: healedDuringOutage,
        target: '> 0',
        pass: healedDuringOutage > 0,
      }),
      zeroFigure(SUITE, 'sends refused while Redis was down', outage.refused),
    ];
    expect(figures.filter((x) => !x.pass).map((x) => `${x.name} = ${x.value} (target ${x.target})`)).toEqual([]);
    expect(lost).toBe(0);
    expect(missed).toBe(0);
    expect(duplicates).toBe(0);
    expect(outOfOrder).toBe(0);
    expect(replayed).toBeGreaterThan(0);
    expect(healedDuringOutage).toBeGreaterThan(0);
  });
});
