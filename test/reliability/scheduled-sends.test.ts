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
import { scale } from './support/scale.js';
import { until } from './support/until.js';
import { percentile } from './support/client-address.js';

// Scheduled sends across a worker kill -9 (docs/workflow.md, "Scheduled sends"). N sends are
// scheduled over a window, every tenth is cancelled before it is due, and two worker processes
// (real time: a process has no test clock) take them as they fall due while one of them is killed
// with SIGKILL mid-window and restarted. Judged from the database: when each was admitted (its
// audit entry, written by the worker as it leaves) against its sendAt, and the copies delivered.
//
// On time: admitted no earlier than sendAt and within one poll interval after it (plus the claim's
// own cost, CLAIM_ALLOWANCE_MS). The exception a kill explains: the jobs the killed worker held
// (up to its WORKER_CONCURRENCY) wait for their leases to expire, so each kill may make that many
// sends late by up to the lease.

const SUITE = 'scheduled sends';
const N = scale(60, 10_000);
// A due rate the two workers sustain on a shared machine (~6 per second short, ~17 full): the figure
// judges timing and once-ness, not throughput.
const WINDOW_MS = scale(10_000, 600_000);
const POLL_MS = 500;
const LEASE_MS = 2_000;
const CONCURRENCY = 8;
/** Each worker's WORKER_CONCURRENCY (the shipped default). */
const WORKER_CONCURRENCY = 4;
/**
 * What a poll costs on top of its interval: the loop sleeps the interval after each empty claim,
 * and the admission's time is taken after the claim and two reads: tens of ms when the run has the
 * machine (`make reliability`), up to a second while `make test` runs other files on the same two
 * cores (783–977 ms late against a 500 ms poll was seen there, on a slower machine of the same kind
 * several times what this machine takes): the short size judges once-ness strictly and timing loosely.
 */
const CLAIM_ALLOWANCE_MS = scale(1_500, 100);
const ON_TIME_MS = POLL_MS + CLAIM_ALLOWANCE_MS;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('scheduled sends across a worker kill -9', () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | undefined;
  let api: Runtime | undefined;
  let apiDataDir: string | undefined;
  const workers: ServiceProcess[] = [];
  let db: pg.Client | undefined;

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await api?.close();
    if (apiDataDir) rmSync(apiDataDir, { recursive: true, force: true });
    await db?.end();
    await scratch?.drop();
  }, 60_000);

  it(`${N} scheduled sends leave on time, once, and cancelled ones never`, async () => {
    scratch = await createScratchDatabase();
    const env = {
      DATABASE_URL: scratch.url,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      DATABASE_POOL_MAX: '4',
      SMTP_HOSTNAME: 'mx.reliability.test',
      SEND_RATE_LIMIT_PER_MINUTE: '1000000',
    };
    const domain = await seedDomain(env);
    apiDataDir = mkdtempSync(path.join(tmpdir(), 'mbx-rel-api-'));
    api = await startRuntime(loadConfig({ ...env, PORT: '0', HOST: '127.0.0.1', MAILBOX_DATA_DIR: apiDataDir }), {
      roles: ['api'],
      log: silentLogger,
    });
    const admin = apiClient(`http://127.0.0.1:${api.httpPort}`, domain.token);
    const sender = `sched@${domain.name}`;
    const receiver = `inbox@${domain.name}`;
    for (const address of [sender, receiver])
      expect((await admin.post('/api/mailboxes', { address })).status).toBe(201);
    db = new pg.Client({ connectionString: scratch.url });
    await db.connect();
    const [{ id: receiverId }] = (await db.query('select id from mailbox where address = $1', [receiver])).rows;

    // The workers run from the start: the claim itself keeps them off every job not yet due.
    for (let w = 0; w < 2; w++) {
      const worker = await serviceProcess(
        {
          ...env,
          LOG_LEVEL: 'warn',
          WORKER_POLL_INTERVAL: `${POLL_MS}ms`,
          WORKER_LEASE: `${LEASE_MS}ms`,
          WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
        },
        'worker',
      );
      workers.push(worker);
      await worker.start();
    }
    // Due over the window that starts once all are scheduled.
    const t0 = Date.now() + scale(4_000, 150_000);
    const ids: string[] = new Array(N);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < N; i = next++) {
          const res = await admin.post('/api/messages/send', {
            mailboxAddress: sender,
            toAddress: receiver,
            subject: `sched #${i}`,
            bodyText: `scheduled ${i}`,
            sendAt: t0 + Math.floor((i * WINDOW_MS) / N),
          });
          expect(res.status, JSON.stringify(res.body)).toBe(202);
          expect(res.body.data.status).toBe('scheduled');
          ids[i] = res.body.data.messageId as string;
        }
      }),
    );
    expect(Date.now()).toBeLessThan(t0);
    const cancelled = ids.filter((_, i) => i % 10 === 5);
    for (const id of cancelled)
      expect((await admin.delete(`/api/messages/${id}/schedule?mailboxAddress=${sender}`)).status).toBe(200);

    await sleep(Math.max(0, t0 + WINDOW_MS / 2 - Date.now()));
    const killAt = Date.now();
    const supervisor = new Supervisor(workers[0]!);
    await supervisor.crash();
    const kills = supervisor.restarts;

    const expected = N - cancelled.length;
    await until(
      'every scheduled send delivered',
      async () =>
        Number(
          (
            await db!.query(`select count(*) as n from message where mailbox_id = $1 and direction = 'inbound'`, [
              receiverId,
            ])
          ).rows[0].n,
        ) >= expected,
      WINDOW_MS + 120_000,
    );
    await sleep(2 * POLL_MS); // anything that would leave twice or leave cancelled has had its chance

    const admitted = (
      await db.query<{ id: string; send_at: Date; at: Date; n: string }>(
        `select m.id, m.send_at, min(a.created_at) as at, count(a.*) as n from message m
           join audit_entry a on a.message_id = m.id and a.decision = 'accepted'
         where m.id = any($1::text[]) group by m.id, m.send_at`,
        [ids],
      )
    ).rows;
    const copies = (
      await db.query<{ subject: string; n: string }>(
        `select subject, count(*) as n from message where mailbox_id = $1 and direction = 'inbound' group by subject`,
        [receiverId],
      )
    ).rows;
    const cancelledSubjects = new Set(
      ids
        .map((_, i) => i)
        .filter((i) => i % 10 === 5)
        .map((i) => `sched #${i}`),
    );
    const lateness = admitted.map((r) => new Date(r.at).getTime() - new Date(r.send_at).getTime());
    const early = lateness.filter((ms) => ms < 0).length;
    const lateOnes = lateness.filter((ms) => ms > ON_TIME_MS);
    const late = lateOnes.length;
    console.log(
      `[scheduled sends] late (ms): ${lateOnes.sort((x, y) => x - y).join(', ') || 'none'}; kill at +${killAt - t0} ms`,
    );
    const twice = copies.filter((c) => Number(c.n) > 1).length;
    const cancelledLeft = copies.filter((c) => cancelledSubjects.has(c.subject)).length;
    const missing = expected - copies.filter((c) => !cancelledSubjects.has(c.subject)).length;
    const worst = Math.max(0, ...lateness);

    zeroFigure(SUITE, 'left before sendAt', early);
    zeroFigure(SUITE, 'delivered twice', twice);
    zeroFigure(SUITE, 'cancelled but delivered', cancelledLeft);
    zeroFigure(SUITE, 'never delivered', missing);
    recordFigure({
      suite: SUITE,
      name: 'admitted more than once',
      value: admitted.filter((r) => Number(r.n) > 1).length,
      target: '= 0',
      pass: admitted.every((r) => Number(r.n) === 1),
    });
    recordFigure({
      suite: SUITE,
      name: `later than the poll interval (${POLL_MS} ms + ${CLAIM_ALLOWANCE_MS} ms claim) after sendAt`,
      value: late,
      target: `≤ ${kills * WORKER_CONCURRENCY} (the jobs a killed worker held, late by ≤ the lease)`,
      pass: late <= kills * WORKER_CONCURRENCY,
    });
    // Below 100 sends the p99 is the slowest send, which may be one the killed worker held: the
    // bound on the slowest is the lease that job waits out plus the on-time allowance.
    recordFigure({
      suite: SUITE,
      name: `lateness p50 / p99 / slowest (of ${lateness.length})`,
      value: `${percentile(lateness, 50)} / ${percentile(lateness, 99)} / ${worst} ms`,
      target: `slowest ≤ ${LEASE_MS + ON_TIME_MS} ms (the lease + ${ON_TIME_MS} ms)`,
      pass: worst <= LEASE_MS + ON_TIME_MS,
    });

    expect(admitted).toHaveLength(expected);
    expect(early).toBe(0);
    expect(twice).toBe(0);
    expect(cancelledLeft).toBe(0);
    expect(missing).toBe(0);
    expect(admitted.every((r) => Number(r.n) === 1)).toBe(true);
    expect(late).toBeLessThanOrEqual(kills * WORKER_CONCURRENCY);
    expect(worst).toBeLessThanOrEqual(LEASE_MS + ON_TIME_MS);
  }, 900_000);
});
