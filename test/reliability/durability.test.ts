import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  privatePostgres,
  seedDomain,
  serviceProcess,
  Supervisor,
  type PrivatePostgres,
  type ServiceProcess,
} from '../support/processes.js';
import { recordFigure, zeroFigure } from './support/figures.js';
import { scale } from './support/scale.js';
import { Ledger, type Channel, type ReplyRecord } from './support/ledger.js';
import { ApiClient, SmtpClient, attachmentOf, expectedText, type Submission } from './support/load.js';
import { crashPostgres } from './support/pg-crash.js';
import { verifyBlobs, verifyMessages } from './support/verify.js';
import { openOrm } from '../../src/storage/orm.js';
import { Database, sql } from '../../src/storage/database.js';
import { loadConfig } from '../../src/config/config.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import { silentLogger } from '../../src/core/base/logger.js';
import { submissionQueueWorker } from '../support/intake-queue.js';
import { PgBlobStore } from '../../src/storage/blobs/pg-blob-store.js';
import { StorageSweeper } from '../../src/core/flows/housekeeping/storage-sweeper.js';
import { systemClock } from '../../src/core/base/time.js';

// Durability and queue: nothing acknowledged is lost. 8 clients (4 SMTP submission over
// STARTTLS, 4 HTTP) submit while the SMTP and API processes are killed with SIGKILL and restarted,
// and PostgreSQL is stopped immediately and started again. A ledger records every 250/202 the
// moment it arrives; afterwards the database is judged against it. A negative control with
// synchronous_commit=off must make the same harness report a loss.
//
// Recipients are external (@example.invalid) and no worker runs, so every message stays queued
// where the checks can see it whole: message, recipients, outbox job, event, counters, blobs. A
// 250 on 587 is the commit of a submission_queue row (queued submission, docs/api.md): after the
// load, the worker's own code writes those rows as messages (writeQueuedSubmissions), so the
// ledger is judged against message rows and the queue must end empty with nothing set aside.

const SUITE = 'durability';
const CLIENTS = 8;
const N = scale(480, 10_000);
const KILLS = scale(1, 3);
const PG_STOPS = scale(1, 2);
const CONTROL_N = scale(240, 1_000);
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Harness {
  pg: PrivatePostgres;
  url: string;
  env: Record<string, string>;
  smtp: ServiceProcess;
  api: ServiceProcess;
  mailboxes: { address: string; token: string }[];
  close(): Promise<void>;
}

async function startHarness(settings: Record<string, string>): Promise<Harness> {
  const pg = await privatePostgres(settings);
  const url = await pg.createDatabase('mailbox');
  // LOG_LEVEL warn: per-message info lines would cost CPU the load needs.
  const env = {
    DATABASE_URL: url,
    MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'warn',
    SMTP_HOSTNAME: 'mail.test',
    DATABASE_POOL_MAX: '8',
  };
  const domain = await seedDomain(env);
  const [smtp, api] = await Promise.all([serviceProcess(env, 'smtp'), serviceProcess(env, 'api')]);
  await Promise.all([smtp.start(), api.start()]);
  const mailboxes: Harness['mailboxes'] = [];
  for (let i = 0; i < CLIENTS; i++) {
    const address = `client${i}@${domain.name}`;
    const res = await fetch(`${api.url}/api/mailboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${domain.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ address }),
    });
    const body = (await res.json()) as { data: { initialAccessToken: string } };
    if (res.status !== 201) throw new Error(`mailbox ${address}: ${res.status} ${JSON.stringify(body)}`);
    mailboxes.push({ address, token: body.data.initialAccessToken });
  }
  return {
    pg,
    url,
    env,
    smtp,
    api,
    mailboxes,
    async close() {
      await Promise.all([smtp.stop(), api.stop()]);
      await pg.destroy();
    },
  };
}

type Fault = 'smtp' | 'api' | 'pg';

interface RunOptions {
  n: number;
  faults: Fault[];
  /** How long the WAL writer is frozen before each PostgreSQL stop, and how long it stays down. */
  freezeMs: number;
  downMs: number;
  deadlineMs: number;
}

interface RunResult {
  ledger: Ledger;
  submissions: Submission[];
  performed: Record<Fault, number>;
  strikes: { fault: Fault; acks: number }[];
  unplannedExits: number;
  /** Acknowledgements that arrived while the WAL writer was frozen (what the control must lose). */
  ackedWhileFrozen: number;
  ms: number;
}

/** The faults at random moments: one per equal slice of 10 %..70 % of the acknowledgements, in random order. */
function plan(n: number, faults: Fault[]): { at: number; fault: Fault }[] {
  const shuffled = [...faults].sort(() => Math.random() - 0.5);
  const from = 0.1 * n;
  const slice = (0.6 * n) / Math.max(1, shuffled.length);
  return shuffled.map((fault, i) => ({ fault, at: Math.floor(from + slice * (i + Math.random())) }));
}

async function runLoad(h: Harness, o: RunOptions, ledgerName: string): Promise<RunResult> {
  const t0 = Date.now();
  const deadline = t0 + o.deadlineMs;
  const ledger = new Ledger(ledgerName);
  const submissions: Submission[] = [];
  for (let i = 0; i < o.n; i++) {
    const client = i % CLIENTS;
    const channel: Channel = client < CLIENTS / 2 ? 'smtp' : 'api';
    const multipart = channel === 'smtp' && Math.floor(i / CLIENTS) % 4 === 0;
    const id = `L${String(i).padStart(5, '0')}`;
    const recipients = [`r${i % 3}@example.invalid`, ...(i % 5 === 0 ? ['cc@example.invalid'] : [])];
    const draft = {
      id,
      channel,
      client,
      mailbox: h.mailboxes[client]!.address,
      recipients,
      bodySha256: '',
      attachmentSha256: multipart ? sha256(attachmentOf(id)) : null,
    };
    const entry = ledger.add(draft);
    const s: Submission = { entry, from: h.mailboxes[client]!.address, multipart };
    entry.bodySha256 = sha256(expectedText(s));
    submissions.push(s);
  }

  const supervisors = { smtp: new Supervisor(h.smtp), api: new Supervisor(h.api) };
  const crashing = { smtp: false, api: false };
  let unplannedExits = 0;
  let ackedWhileFrozen = 0;
  const performed: Record<Fault, number> = { smtp: 0, api: 0, pg: 0 };
  /** Acknowledgements so far when each fault struck: below n means it hit a running load. */
  const strikes: { fault: Fault; acks: number }[] = [];
  let loadDone = false;

  const clients = Array.from({ length: CLIENTS }, async (_, c) => {
    const mine = submissions.filter((s) => s.entry.client === c);
    const box = h.mailboxes[c]!;
    if (mine[0]?.entry.channel === 'smtp') {
      const client = new SmtpClient(h.smtp.ports.submission, box.address, box.token, { ledger, deadline });
      for (const s of mine) await client.submit(s);
      client.close();
    } else {
      const client = new ApiClient(h.api.url, box.token, { ledger, deadline });
      for (const s of mine) await client.submit(s);
    }
  });

  // Kills do not wait for the restart (the other channel keeps submitting meanwhile); a PostgreSQL
  // stop waits for restarts to finish, since a starting process migrates and needs the database.
  const restarts: Record<'smtp' | 'api', Promise<void>> = { smtp: Promise.resolve(), api: Promise.resolve() };
  const faults = (async () => {
    for (const { at, fault } of plan(o.n, o.faults)) {
      await ledger.waitForAcks(at, deadline);
      if (Date.now() >= deadline) return;
      if (fault === 'pg') {
        await Promise.all(Object.values(restarts));
        const before = ledger.acks;
        strikes.push({ fault, acks: before });
        let frozenAcks = 0;
        const crash = await crashPostgres(h.pg, {
          freezeMs: o.freezeMs,
          downMs: o.downMs,
          // Stop while half of what is left is still unacknowledged, so clients meet the outage
          // (on a quiet machine a short run could otherwise finish inside the freeze).
          endFreeze: () => ledger.acks >= before + (o.n - before) / 2,
          onDown: (at) => {
            frozenAcks = ledger.acks - before;
            ledger.down.push({ from: at, to: Infinity });
          },
          onUp: (at) => {
            ledger.down[ledger.down.length - 1]!.to = at;
          },
        });
        ackedWhileFrozen += frozenAcks;
        console.log(
          `[${ledgerName}] PostgreSQL stopped ${crash.downFrom - t0} ms into the load at ${before} acknowledgements, for ${crash.downTo - crash.downFrom} ms; ${frozenAcks} acknowledged while the WAL writer was frozen`,
        );
      } else {
        await restarts[fault];
        strikes.push({ fault, acks: ledger.acks });
        crashing[fault] = true;
        restarts[fault] = supervisors[fault].crash().finally(() => {
          crashing[fault] = false;
        });
      }
      performed[fault]++;
    }
    await Promise.all(Object.values(restarts));
  })();

  // A process that dies without being killed is a finding; restart it so the run can finish.
  const watchdog = (async () => {
    while (!loadDone) {
      for (const k of ['smtp', 'api'] as const) {
        if (!crashing[k] && !supervisors[k].proc.running()) {
          unplannedExits++;
          crashing[k] = true;
          await supervisors[k].proc.start().catch(() => undefined);
          crashing[k] = false;
        }
      }
      await sleep(250);
    }
  })();

  await Promise.all(clients);
  await faults;
  loadDone = true;
  await watchdog;
  ledger.dumpReplies();
  console.log(
    `[${ledgerName}] faults struck at ${strikes.map((x) => `${x.fault}@${x.acks}`).join(', ')}; restart time smtp ${supervisors.smtp.downMs} ms, api ${supervisors.api.downMs} ms`,
  );
  return { ledger, submissions, performed, strikes, unplannedExits, ackedWhileFrozen, ms: Date.now() - t0 };
}

/** Replies while PostgreSQL was stopped, and refusals over the whole run that no client should ever see. */
function judgeReplies(ledger: Ledger) {
  const transientSmtp = (r: ReplyRecord) =>
    (r.code === 451 && r.text.startsWith('451 4.3.0 Temporary storage failure')) ||
    (r.code === 454 && r.text.startsWith('454 4.7.0 Temporary authentication failure')) ||
    r.code === 421;
  const isRefusal = (r: ReplyRecord) => (r.channel === 'smtp' ? r.code >= 400 : r.code >= 400 || !r.envelope);
  const whileDown = ledger.replies.filter((r) => ledger.isDown(r.at));
  const acked = ledger.replies.filter((r) =>
    r.channel === 'smtp' ? r.stage === 'end' && r.code === 250 : r.code === 202,
  );
  const histogram = (rs: ReplyRecord[]) =>
    Object.entries(
      rs.reduce<Record<string, number>>((acc, r) => {
        const key = `${r.channel} ${r.stage} ${r.channel === 'smtp' ? r.text.slice(0, 40) : r.text.slice(0, 60)}`;
        acc[key] = (acc[key] ?? 0) + 1;
        return acc;
      }, {}),
    ).map(([k, v]) => `${v} × ${k}`);
  return {
    // A submission sent after PostgreSQL was gone and answered before it was back cannot be durable.
    ackedWhileDown: acked.filter((r) => ledger.sentAndAnsweredWhileDown(r.sentAt, r.at)).length,
    // Answered inside the window but sent before the stop: durable if committed before it (lost = 0 checks).
    ackedInFlightAtStop: acked.filter((r) => ledger.isDown(r.at) && !ledger.sentAndAnsweredWhileDown(r.sentAt, r.at))
      .length,
    refusalsWhileDown: whileDown.filter(isRefusal).length,
    wrongWhileDown: whileDown.filter(
      (r) => isRefusal(r) && !(r.channel === 'smtp' ? transientSmtp(r) : r.code === 503 && r.envelope),
    ),
    // Over the whole run: an HTTP 500 or a body outside the envelope; an SMTP 5xx or a 451 that is
    // an unclassified internal error rather than storage being unavailable.
    httpBroken: ledger.replies.filter((r) => r.channel === 'api' && ((r.code >= 500 && r.code !== 503) || !r.envelope)),
    smtpBroken: ledger.replies.filter(
      (r) => r.channel === 'smtp' && (r.code >= 500 || (r.code >= 400 && !transientSmtp(r))),
    ),
    histogramWhileDown: histogram(whileDown),
  };
}

/**
 * Port 587's queue written as messages by the production worker (IntakeQueueWorker over
 * SubmissionQueue), in this process, until it is empty: what the worker role does behind the 250s.
 */
async function writeQueuedSubmissions(env: Record<string, string>): Promise<{ written: number; setAside: number }> {
  const runtime = await startRuntime(loadConfig({ ...env, LOG_LEVEL: 'error' }), { roles: [], log: silentLogger });
  try {
    const worker = submissionQueueWorker(runtime); // one attempt per row: a failure is set aside at once
    let written = 0;
    for (let n = await worker.runOnce(); n > 0; n = await worker.runOnce()) written += n;
    const left = await runtime.services.db.rows(sql<{ n: number }>`select count(*)::int as n from submission_queue`);
    return { written, setAside: Number(left[0]?.n ?? 0) };
  } finally {
    await runtime.close();
  }
}

async function sweep(url: string) {
  const orm = await openOrm({ databaseUrl: url, poolMax: 2 });
  try {
    const db = new Database(orm);
    // The load is over: nothing is in flight, so no grace is needed to tell debris from a write.
    return await new StorageSweeper(db, new PgBlobStore(db), systemClock, { orphanGraceMs: 0, uploadTtlMs: 0 }).sweep();
  } finally {
    await orm.close(true);
  }
}

describe('durability: kill -9 and PostgreSQL stops during submissions', () => {
  const harnesses: Harness[] = [];
  afterAll(async () => {
    for (const h of harnesses) await h.close().catch(() => undefined);
  });

  it(`${N} submissions over SMTP and HTTP, ${KILLS}× kill -9 of each process, ${PG_STOPS}× PostgreSQL stopped: nothing acknowledged is lost`, async () => {
    const t0 = Date.now();
    const h = await startHarness({});
    harnesses.push(h);
    const faults: Fault[] = [...Array(KILLS).fill('smtp'), ...Array(KILLS).fill('api'), ...Array(PG_STOPS).fill('pg')];
    const run = await runLoad(
      h,
      { n: N, faults, freezeMs: 1_000, downMs: scale(3_000, 5_000), deadlineMs: scale(180_000, 3_000_000) },
      'durability-ledger',
    );
    await Promise.all([h.smtp.stop(), h.api.stop()]);
    const queue = await writeQueuedSubmissions(h.env);
    const v = await verifyMessages(h.url, run.ledger);
    const blobsBefore = await verifyBlobs(h.url);
    const swept = await sweep(h.url);
    const blobsAfter = await verifyBlobs(h.url);
    const replies = judgeReplies(run.ledger);
    const acked = [...run.ledger.entries.values()].filter((e) => e.ack).length;
    const byChannel = (c: Channel) => [...run.ledger.entries.values()].filter((e) => e.channel === c && e.ack).length;

    console.log(
      `[durability] ${acked}/${N} acknowledged (smtp ${byChannel('smtp')}, api ${byChannel('api')}) in ${run.ms} ms; faults ${JSON.stringify(run.performed)}; ` +
        `stored ${v.stored}; partial ${JSON.stringify(v.partial)}; sweep ${JSON.stringify(swept)}; acked while WAL writer frozen ${run.ackedWhileFrozen}`,
    );
    console.log(`[durability] replies while PostgreSQL down:\n  ${replies.histogramWhileDown.join('\n  ')}`);
    for (const r of [...replies.wrongWhileDown, ...replies.httpBroken, ...replies.smtpBroken].slice(0, 20))
      console.log(`[durability] unexpected reply: ${JSON.stringify(r)}`);
    // The services' own account of unexpected replies (a 503 is logged at error level too, so only then).
    if (replies.httpBroken.length + replies.smtpBroken.length > 0) {
      const errors = [...h.smtp.logs(), ...h.api.logs()].filter(
        (l) => l.includes('"level":"error"') && !l.includes('ECONNREFUSED'),
      );
      for (const l of errors.slice(0, 10)) console.log(`[durability] service error log: ${l.slice(0, 1500)}`);
    }

    const figures = [
      recordFigure({
        suite: SUITE,
        name: `submissions acknowledged (${CLIENTS} clients, half SMTP half HTTP)`,
        value: acked,
        target: `= ${N}`,
        pass: acked === N,
      }),
      recordFigure({
        suite: SUITE,
        name: 'kill -9 + restart: SMTP / API processes',
        value: `${run.performed.smtp} / ${run.performed.api}`,
        target: `${KILLS} / ${KILLS}`,
        pass: run.performed.smtp === KILLS && run.performed.api === KILLS,
      }),
      recordFigure({
        suite: SUITE,
        name: 'PostgreSQL stopped immediately and restarted',
        value: run.performed.pg,
        target: `= ${PG_STOPS}`,
        pass: run.performed.pg === PG_STOPS,
      }),
      recordFigure({
        suite: SUITE,
        name: 'faults that struck while submissions were running',
        value: `${run.strikes.filter((x) => x.acks < N).length}/${faults.length}`,
        target: `${faults.length}/${faults.length}`,
        pass: run.strikes.length === faults.length && run.strikes.every((x) => x.acks < N),
      }),
      zeroFigure(SUITE, 'process exits nobody caused', run.unplannedExits),
      recordFigure({
        suite: SUITE,
        name: 'acknowledged while the WAL writer was frozen before a stop (informational; none may be lost)',
        value: run.ackedWhileFrozen,
        target: 'informational',
        pass: true,
      }),
      zeroFigure(SUITE, 'acknowledged but lost', v.lost),
      zeroFigure(
        SUITE,
        `queued submissions (587) the worker set aside, of ${queue.written + queue.setAside} queued`,
        queue.setAside,
      ),
      zeroFigure(SUITE, 'stored with a wrong body hash (text, raw message, attachment)', v.wrongHash),
      zeroFigure(SUITE, 'duplicates of acknowledged messages', v.duplicates),
      zeroFigure(
        SUITE,
        'stored although the reply was a refusal (other than 451 4.3.0 storage failure)',
        v.storedAfterRefusal,
      ),
      zeroFigure(SUITE, 'HTTP retries stored twice despite Idempotency-Key', v.apiStoredTwice),
      zeroFigure(SUITE, 'stored messages no client submitted', v.unknownMessages),
      recordFigure({
        suite: SUITE,
        name: 'unacknowledged retries stored twice (SMTP try cut off before its reply, or 451 after PostgreSQL died mid-COMMIT; informational)',
        value: `${v.unansweredStoredTwice + v.storageFailureStoredTwice} (${v.unansweredStoredTwice} + ${v.storageFailureStoredTwice})`,
        target: 'informational',
        pass: true,
      }),
      zeroFigure(SUITE, 'partial rows (message/recipients/outbox job/event/counters not all there)', v.partialRows),
      recordFigure({
        suite: SUITE,
        name: 'orphan blobs before the sweeper (informational)',
        value: blobsBefore.orphanBlobs,
        target: 'informational',
        pass: true,
      }),
      recordFigure({
        suite: SUITE,
        name: 'unclaimed staged attachments before the sweeper (informational)',
        value: blobsBefore.unclaimedAttachments,
        target: 'informational',
        pass: true,
      }),
      zeroFigure(SUITE, 'orphan blobs after the sweeper', blobsAfter.orphanBlobs),
      zeroFigure(SUITE, 'unclaimed staged attachments after the sweeper', blobsAfter.unclaimedAttachments),
      zeroFigure(SUITE, 'referenced blobs missing', blobsBefore.missingBlobs + blobsAfter.missingBlobs),
      zeroFigure(SUITE, '250/202 for a submission sent and answered while PostgreSQL was down', replies.ackedWhileDown),
      recordFigure({
        suite: SUITE,
        name: 'refusals received while PostgreSQL was down (informational)',
        value: replies.refusalsWhileDown,
        target: 'informational',
        pass: true,
      }),
      zeroFigure(
        SUITE,
        'refusals while PostgreSQL was down other than 451 4.3.0 / 454 4.7.0 / 503 envelope',
        replies.wrongWhileDown.length,
      ),
      zeroFigure(SUITE, 'HTTP 500 or non-envelope responses (whole run)', replies.httpBroken.length),
      zeroFigure(SUITE, 'SMTP 5xx or unclassified 451 (whole run)', replies.smtpBroken.length),
      recordFigure({
        suite: SUITE,
        name: 'run time, s (informational)',
        value: Math.round((Date.now() - t0) / 1000),
        target: 'informational',
        pass: true,
      }),
    ];
    expect(figures.filter((f) => !f.pass).map((f) => `${f.name} = ${f.value}`)).toEqual([]);
    // The check is only meaningful if the run got somewhere and the faults hit it.
    expect(replies.refusalsWhileDown).toBeGreaterThan(0);
    expect(v.stored).toBeGreaterThanOrEqual(N);
  });

  it(`negative control: the same harness with synchronous_commit=off reports a loss (${CONTROL_N} submissions, PostgreSQL stopped once)`, async () => {
    const h = await startHarness({ synchronous_commit: 'off', wal_writer_delay: '10s', wal_writer_flush_after: '1GB' });
    harnesses.push(h);
    const run = await runLoad(
      h,
      { n: CONTROL_N, faults: ['pg'], freezeMs: 1_000, downMs: 2_000, deadlineMs: scale(120_000, 600_000) },
      'durability-control-ledger',
    );
    await Promise.all([h.smtp.stop(), h.api.stop()]);
    const v = await verifyMessages(h.url, run.ledger);
    const blobs = await verifyBlobs(h.url);
    console.log(
      `[durability control] acked while WAL writer frozen ${run.ackedWhileFrozen}; lost ${v.lost}; partial ${JSON.stringify(v.partial)}`,
    );
    const figures = [
      recordFigure({
        suite: SUITE,
        name: 'negative control (synchronous_commit=off): acknowledged but lost',
        value: `${v.lost} (of ${run.ackedWhileFrozen} acknowledged while the WAL writer was frozen)`,
        target: '> 0',
        pass: v.lost > 0,
      }),
      // Asynchronous commit loses whole transactions at the end of the WAL, never part of one.
      zeroFigure(SUITE, 'negative control: partial rows', v.partialRows),
      zeroFigure(SUITE, 'negative control: referenced blobs missing', blobs.missingBlobs),
    ];
    expect(figures.filter((f) => !f.pass).map((f) => `${f.name} = ${f.value}`)).toEqual([]);
  });
});
