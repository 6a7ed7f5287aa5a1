import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { apiClient, createScratchDatabase } from '../support/harness.js';
import { seedDomain, serviceProcess, Supervisor, type ServiceProcess } from '../support/processes.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { recordFigure, zeroFigure } from './support/figures.js';
import { FULL, scale } from './support/scale.js';
import { until } from './support/until.js';
import { seededRandom, startFaultSink, type FaultSink } from './support/fault-sink.js';

// Outbound under faults: N messages to external recipients through a relay that
// answers 4xx to ~20% of the attempts and drops ~5% mid-DATA, while a supervisor kill -9s and
// restarts the delivery worker. Every message must end delivered; a message the remote accepted
// twice is allowed only where its first 250 raced a crash, and each such duplicate is tied to
// the kill that caused it; no job may be left with an expired lease.
//
// Kills alternate between a random moment (after a seeded 0–400 ms pause once a share of the
// messages is through) and the worst moment: the sink has accepted (committed) a message and
// holds its 250 until the worker is dead, so the worker never records it. The second kind proves
// the harness sees a duplicate when one happens.

const SUITE = 'outbound faults';
const N = scale(150, 1000);
const KILLS = scale(2, 5);
const SEED = Number(process.env.RELIABILITY_SEED ?? 20261122);
// Full mode keeps the issue's literal check, 60 s after the last restart, with a lease (30 s)
// that must have expired and been retaken by then. Short mode: a 5 s lease, checked once the
// lease, two poll intervals and 3 s (one delivery in flight on a loaded machine) have passed
// since the last restart. An expired job keeps its place in the queue, so a backlog of due jobs
// does not hold it back.
const LEASE_MS = scale(5_000, 30_000);
const POLL_MS = 200;
/** The worker's WORKER_CONCURRENCY: the jobs a kill can catch between a remote 250 and its record. */
const CONCURRENCY = 4;
const CHECK_AFTER_RESTART_MS = scale(LEASE_MS + 2 * POLL_MS + 3_000, 60_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('outbound delivery under relay faults and worker crashes', () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | undefined;
  let api: Runtime | undefined;
  let apiDataDir: string | undefined;
  let worker: ServiceProcess | undefined;
  let sink: FaultSink | undefined;
  let db: pg.Client | undefined;

  afterAll(async () => {
    await worker?.stop();
    await api?.close();
    if (apiDataDir) rmSync(apiDataDir, { recursive: true, force: true });
    await sink?.close();
    await db?.end();
    await scratch?.drop();
  }, 60_000);

  it(`delivers all ${N} messages through ${KILLS} worker kills, duplicates only where a 250 raced a crash`, async () => {
    scratch = await createScratchDatabase();
    sink = await startFaultSink({ tempFail: 0.2, drop: 0.05 }, SEED);
    const env = {
      DATABASE_URL: scratch.url,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      DATABASE_POOL_MAX: '4',
      SMTP_HOSTNAME: 'mta.reliability.test',
    };
    const domain = await seedDomain(env);

    // Queue every message first, through the HTTP API of an in-process runtime (not killed).
    apiDataDir = mkdtempSync(path.join(tmpdir(), 'mbx-rel-api-'));
    api = await startRuntime(loadConfig({ ...env, PORT: '0', HOST: '127.0.0.1', MAILBOX_DATA_DIR: apiDataDir }), {
      roles: ['api'],
      log: silentLogger,
    });
    const base = `http://127.0.0.1:${api.httpPort}`;
    const created = await apiClient(base, domain.token).post('/api/mailboxes', { address: `sender@${domain.name}` });
    expect(created.status).toBe(201);
    const sender = apiClient(base, created.body.data.initialAccessToken as string);
    const queued: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < N) {
          const i = next++;
          const res = await sender.post('/api/messages/send', {
            toAddress: `rcpt${i}@remote-${i % 7}.example`,
            subject: `fault run #${i}`,
            bodyText: `message ${i}`,
          });
          expect(res.status, JSON.stringify(res.body)).toBe(202);
          queued.push(res.body.data.messageId as string);
        }
      }),
    );
    expect(queued).toHaveLength(N);
    db = new pg.Client({ connectionString: scratch.url });
    await db.connect();
    const ids = (
      await db.query<{ id: string; internet_message_id: string }>(
        `select id, internet_message_id from message where id = any($1)`,
        [queued],
      )
    ).rows;
    const byHeader = new Map(ids.map((r) => [r.internet_message_id.replace(/^<|>$/g, ''), r.id]));

    // The worker, pointed at the faulty relay, with short retries and lease (config keys).
    worker = await serviceProcess(
      {
        ...env,
        SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.port}`,
        WORKER_POLL_INTERVAL: `${POLL_MS}ms`,
        WORKER_LEASE: `${LEASE_MS}ms`,
        WORKER_CONCURRENCY: String(CONCURRENCY),
        DELIVERY_RETRY_BASE: '200ms',
        DELIVERY_RETRY_MAX: '2s',
      },
      'worker',
    );
    const supervisor = new Supervisor(worker);
    await worker.start();

    const random = seededRandom(SEED ^ 0x5eed);
    const kills: { at: number; armed: boolean }[] = [];
    for (let k = 0; k < KILLS; k++) {
      const threshold = Math.floor((N * (k + 1)) / (KILLS + 1));
      await until(`${threshold} messages at the sink`, () => sink!.accepted.size >= threshold, 300_000);
      const armed = k % 2 === 1;
      if (armed) {
        // The worst moment: the remote has committed the message, the worker never hears its 250.
        await new Promise<void>((resolve, reject) =>
          sink!.onNextAccept(() => {
            kills.push({ at: Date.now(), armed: true });
            supervisor.crash().then(resolve, reject);
          }),
        );
      } else {
        await sleep(Math.floor(random() * 400));
        kills.push({ at: Date.now(), armed: false });
        await supervisor.crash();
      }
    }
    const lastRestartAt = Date.now();
    expect(supervisor.restarts).toBe(KILLS);

    // Jobs whose lease has expired and that nobody took back, at the check time.
    const stuckJobs = async () =>
      (
        await db!.query<{ n: string }>(
          `select count(*) as n from outbox_job where status <> 'done' and lease_until is not null and lease_until < now()`,
        )
      ).rows[0]!.n;
    await sleep(Math.max(0, lastRestartAt + CHECK_AFTER_RESTART_MS - Date.now()));
    const stuckAtCheck = Number(await stuckJobs());

    const deliveredCount = async () =>
      Number(
        (
          await db!.query<{ n: string }>(
            `select count(*) as n from message where id = any($1) and delivery_status = 'delivered'`,
            [queued],
          )
        ).rows[0]!.n,
      );
    await until(`all ${N} delivered`, async () => (await deliveredCount()) === N, scale(120_000, 600_000)).catch(
      () => undefined,
    );
    const delivered = await deliveredCount();
    const stuckAtEnd = Number(await stuckJobs());
    const notDone = Number(
      (await db.query<{ n: string }>(`select count(*) as n from outbox_job where status <> 'done'`)).rows[0]!.n,
    );

    // Every copy the remote accepted, tied back to a queued message.
    const unknown = [...sink.accepted.keys()].filter((h) => !byHeader.has(h));
    const atRemote = [...byHeader.keys()].filter((h) => sink!.accepted.has(h)).length;
    const deliveredAt = new Map(
      (
        await db.query<{ message_id: string; delivered_at: Date }>(
          `select message_id, delivered_at from message_recipient where message_id = any($1)`,
          [queued],
        )
      ).rows.map((r) => [r.message_id, r.delivered_at.getTime()]),
    );

    // Each duplicate must follow a kill: its first 250 came before the kill, the recorded
    // delivery (stamped with the start time of the attempt that recorded it) after it, so the
    // first 250 was never recorded; and a worker runs CONCURRENCY jobs at a time, so one kill
    // explains at most that many duplicates.
    const usedKills = new Map<number, number>();
    const duplicates: {
      header: string;
      accepts: number;
      firstAt: number;
      killAt: number | null;
      recordedAt: number | undefined;
      explained: boolean;
    }[] = [];
    for (const [header, accepts] of sink.accepted) {
      if (accepts.length < 2) continue;
      const firstAt = accepts[0]!.at;
      const k = kills.findIndex((kill) => kill.at >= firstAt);
      const recordedAt = deliveredAt.get(byHeader.get(header) ?? '');
      const explained =
        k >= 0 &&
        (usedKills.get(k) ?? 0) < CONCURRENCY &&
        accepts.length === 2 &&
        accepts[1]!.at > kills[k]!.at &&
        recordedAt !== undefined &&
        recordedAt > kills[k]!.at;
      if (explained) usedKills.set(k, (usedKills.get(k) ?? 0) + 1);
      duplicates.push({
        header,
        accepts: accepts.length,
        firstAt,
        killAt: k >= 0 ? kills[k]!.at : null,
        recordedAt,
        explained,
      });
    }
    for (const d of duplicates) {
      console.log(
        `[outbound faults] duplicate ${d.header}: accepted ${d.accepts}× by the remote; first 250 at ${new Date(d.firstAt).toISOString()}, ` +
          `worker killed ${d.killAt === null ? 'never after it' : `${d.killAt - d.firstAt} ms later`}, delivery recorded ${d.recordedAt === undefined ? 'never' : new Date(d.recordedAt).toISOString()} ` +
          `→ ${d.explained ? 'a remote 250 raced a crash' : 'NOT explained by a crash'}`,
      );
    }
    const armedKills = kills.map((k, i) => ({ ...k, i })).filter((k) => k.armed);
    const armedDuplicates = armedKills.filter((k) => usedKills.has(k.i)).length;
    const f = sink.faults;
    const attempts = f['rcpt-4xx'] + f['data-4xx'] + f['drop-mid-data'] + f.none;
    console.log(
      `[outbound faults] ${attempts} attempts at the relay: ${f['rcpt-4xx']} 4xx at RCPT, ${f['data-4xx']} 4xx after DATA, ${f['drop-mid-data']} dropped mid-DATA, ${f.none} accepted; ` +
        `${kills.length} kills (${armedKills.length} right after a 250), ${supervisor.downMs} ms down in total; seed ${SEED}`,
    );

    const figures = [
      recordFigure({
        suite: SUITE,
        name: `messages delivered (status delivered in the DB) of ${N}`,
        value: delivered,
        target: `= ${N}`,
        pass: delivered === N,
      }),
      recordFigure({
        suite: SUITE,
        name: 'messages that reached the remote',
        value: atRemote,
        target: `= ${N}`,
        pass: atRemote === N,
      }),
      recordFigure({
        suite: SUITE,
        name: 'remote duplicates (a 250 raced a crash)',
        value: duplicates.length,
        target: `≤ ${KILLS} kills × ${CONCURRENCY} jobs in flight`,
        pass: duplicates.length <= KILLS * CONCURRENCY,
      }),
      zeroFigure(SUITE, 'remote duplicates not explained by a kill', duplicates.filter((d) => !d.explained).length),
      recordFigure({
        suite: SUITE,
        name: 'kills right after a remote 250 that produced a duplicate',
        value: `${armedDuplicates}/${armedKills.length}`,
        target: '≥ 1 (the harness sees a duplicate)',
        pass: armedDuplicates >= 1,
      }),
      zeroFigure(
        SUITE,
        FULL
          ? 'jobs with an expired lease 60 s after the last restart'
          : `jobs with an expired lease ${CHECK_AFTER_RESTART_MS} ms after the last restart (lease ${LEASE_MS} ms + 2 polls + 3 s)`,
        stuckAtCheck,
      ),
      zeroFigure(SUITE, 'jobs with an expired lease at the end', stuckAtEnd),
      zeroFigure(SUITE, 'jobs not done at the end', notDone),
      zeroFigure(SUITE, 'copies the remote accepted that match no queued message', unknown.length),
      recordFigure({
        suite: SUITE,
        name: 'faults injected (4xx / dropped mid-DATA, of attempts)',
        value: `${f['rcpt-4xx'] + f['data-4xx']} / ${f['drop-mid-data']} of ${attempts}`,
        target: '≈ 20% / 5%, each > 0',
        pass: f['rcpt-4xx'] > 0 && f['data-4xx'] > 0 && f['drop-mid-data'] > 0,
      }),
    ];
    expect(figures.filter((x) => !x.pass).map((x) => `${x.name} = ${x.value} (target ${x.target})`)).toEqual([]);
    expect(delivered).toBe(N);
    expect(duplicates.filter((d) => !d.explained)).toEqual([]);
    expect(duplicates.length).toBeLessThanOrEqual(KILLS * CONCURRENCY);
    expect(armedDuplicates).toBeGreaterThanOrEqual(1);
    expect(stuckAtCheck).toBe(0);
    expect(stuckAtEnd).toBe(0);
    expect(notDone).toBe(0);
    expect(unknown).toEqual([]);
  });
});
