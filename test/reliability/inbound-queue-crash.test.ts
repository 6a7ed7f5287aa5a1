import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { apiClient, createScratchDatabase } from '../support/harness.js';
import { seedDomain, serviceProcess, Supervisor, type ServiceProcess } from '../support/processes.js';
import { deliverToMx } from '../smtp/mx-peer.js';
import { rfc5322 } from '../smtp/smtp-wire.js';
import { startDnsStub } from '../transport/dns-stub.js';
import { recordFigure, zeroFigure } from './support/figures.js';
import { scale } from './support/scale.js';
import { until } from './support/until.js';
import { seededRandom } from './support/fault-sink.js';

// Queued intake on port 25 (docs/api.md, "Queued intake"): exactly once across worker kill -9.
// An api,smtp process that is never killed receives mail over SMTP (MX) from a few concurrent
// senders at a steady rate, for several mailboxes (one with a storage quota, so each message
// reserves quota at intake and the delivery settles it); its 250 ("Queued as inq_…") follows the
// commit of one inbound_queue row, and this process writes every 250 in a ledger. A separate
// worker-role process drains the queue and is killed with SIGKILL several times while mail keeps
// arriving, then started again (like Kubernetes restarts a container). The kills come in pairs:
// one at a random moment (seeded), then one armed on its replacement, which starts with the
// backlog that piled up meanwhile: it is killed as soon as it holds claimed rows, so the kill
// falls inside a batch of deliveries and the next replacement must take those rows over once
// their lease (WORKER_LEASE) runs out. After the last send the queue must drain (no pending row)
// within QUEUE_DRAIN_MS.
//
// Judged in the database against the ledger:
// - acknowledged: 250 replies received (> 0; all of them must be "Queued as inq_…", i.e. the
//   queue path, and no send may be refused: the intake process is never killed);
// - lost: a ledger entry whose subject is not stored in a mailbox it was sent to (= 0);
// - duplicated: extra copies of a subject in one mailbox (= 0: the queue row is deleted in the
//   transaction that stores the message, so a redelivery after a kill finds nothing to redo);
// - stored while pending: sightings, in snapshots taken every few ms for the whole run, of a
//   message already stored whose queue row is still pending (= 0: the two change in one commit;
//   a removal after the commit would show here even when no kill falls into that window);
// - failed / pending queue rows at the end (= 0): nothing set aside, nothing left behind;
// - storage: mailboxes whose storage_used_bytes differs from the sum of stored_bytes of their
//   live messages (= 0: every reservation made at intake was settled exactly once, including
//   those of rows a killed worker held);
// - kills performed (= KILLS), rows a killed worker held in flight (≥ 1: the harness really
//   crashed a worker in the middle of deliveries), and the most quota seen reserved but not yet
//   settled in the quota mailbox (> 0: the reservation path was exercised).

const SUITE = 'inbound queue';
const N = scale(120, 1_200);
const MAILBOXES = 4;
const SENDERS = 4;
const RATE_PER_S = scale(10, 20);
const KILLS = scale(2, 4);
/** Every TWO_RECIPIENTS-th message goes to two mailboxes (one copy each, one queue row). */
const TWO_RECIPIENTS = 7;
const WORKER_LEASE_MS = 2_000;
const QUOTA_BYTES = 50 * 1024 * 1024;
const QUEUE_DRAIN_MS = 60_000;
const SEED = Number(process.env.RELIABILITY_SEED ?? 20261128);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A text body of roughly `bytes` bytes in lines of ordinary length, from the seeded random. */
function body(random: () => number, i: number, bytes: number): string {
  const words = ['queued', 'intake', 'lease', 'worker', 'commit', 'mailbox', 'reserve', 'settle', 'exactly', 'once'];
  const lines = [`Message ${i}.`];
  let size = lines[0]!.length;
  while (size < bytes) {
    const line = Array.from({ length: 12 }, () => words[Math.floor(random() * words.length)]).join(' ');
    lines.push(line);
    size += line.length + 2;
  }
  return lines.join('\r\n');
}

interface Sent {
  subject: string;
  to: string[];
  queueId: string;
}

describe('queued intake across worker kill -9', () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | undefined;
  let dns: Awaited<ReturnType<typeof startDnsStub>> | undefined;
  let intake: ServiceProcess | undefined;
  let worker: ServiceProcess | undefined;
  let db: pg.Pool | undefined;

  afterAll(async () => {
    await worker?.stop();
    await intake?.stop();
    await db?.end();
    await dns?.close();
    await scratch?.drop();
  }, 60_000);

  it(`stores each of ${N} queued messages exactly once through ${KILLS} worker kills`, async () => {
    scratch = await createScratchDatabase();
    dns = await startDnsStub({ 'remote.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
    const env = {
      DATABASE_URL: scratch.url,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      DATABASE_POOL_MAX: '6',
      SMTP_HOSTNAME: 'mx.reliability.test',
      DNS_SERVERS: dns.server,
      LOG_LEVEL: 'warn',
    };
    const domain = await seedDomain(env);
    intake = await serviceProcess(env, 'api,smtp');
    await intake.start();
    const boxes: { mailboxId: string; address: string }[] = [];
    for (let i = 0; i < MAILBOXES; i++) {
      const address = `queue${i}@${domain.name}`;
      const res = await apiClient(intake.url, domain.token).post('/api/mailboxes', { address });
      expect(res.status).toBe(201);
      boxes.push({ mailboxId: res.body.data.mailbox.mailboxId, address });
    }
    db = new pg.Pool({ connectionString: scratch.url, max: 6 });
    const count = async (query: string, params: unknown[] = []) =>
      Number((await db!.query<{ n: string }>(query, params)).rows[0]!.n);
    // Mailbox 0 has a quota: intake reserves in it, delivery settles; the others reserve nothing.
    const quotaBox = boxes[0]!;
    await db.query(`update mailbox set storage_quota_bytes = $2 where id = $1`, [quotaBox.mailboxId, QUOTA_BYTES]);

    worker = await serviceProcess(
      {
        ...env,
        WORKER_LEASE: `${WORKER_LEASE_MS}ms`,
        INBOUND_QUEUE_POLL_INTERVAL: '50ms',
        DELIVERY_RETRY_BASE: '200ms',
        DELIVERY_RETRY_MAX: '1s',
      },
      'worker',
    );
    const supervisor = new Supervisor(worker);
    await worker.start();

    // N messages at a steady rate from SENDERS concurrent senders; every 250 goes in the ledger.
    const ledger: Sent[] = [];
    const notQueued: string[] = [];
    const refused: string[] = [];
    const bodies = seededRandom(SEED);
    const mail = Array.from({ length: N }, (_, i) => {
      const to = [boxes[i % MAILBOXES]!.address];
      if (i % TWO_RECIPIENTS === 0) to.push(boxes[(i + 1) % MAILBOXES]!.address);
      const from = `sender${i}@remote.example`;
      const subject = `queued #${i} (seed ${SEED})`;
      const text = body(bodies, i, 300 + Math.floor(bodies() * 4_000));
      return { to, from, subject, raw: rfc5322({ from, to: to.join(', '), subject, body: text }) };
    });
    let next = 0;
    let answered = 0;
    const t0 = Date.now();
    const senders = Array.from({ length: SENDERS }, async () => {
      for (let i = next++; i < N; i = next++) {
        await sleep(Math.max(0, t0 + (i * 1000) / RATE_PER_S - Date.now()));
        const m = mail[i]!;
        try {
          const { response } = await deliverToMx(intake!.ports.mx, { from: m.from, to: m.to }, m.raw);
          const queueId = /^250 .*Queued as (inq_\S+)/.exec(response)?.[1];
          if (queueId) ledger.push({ subject: m.subject, to: m.to, queueId });
          else notQueued.push(`#${i}: ${response}`);
        } catch (err) {
          refused.push(`#${i}: ${(err as Error).message}`);
        }
        answered++;
      }
    });
    const sending = Promise.all(senders);

    // While mail arrives: the quota mailbox's reservation not yet settled, sampled.
    let maxReserved = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const r = await db!.query<{ outstanding: string }>(
          `select m.storage_used_bytes - coalesce((select sum(stored_bytes) from message
             where mailbox_id = m.id and deleted_at is null), 0) as outstanding from mailbox m where m.id = $1`,
          [quotaBox.mailboxId],
        );
        maxReserved = Math.max(maxReserved, Number(r.rows[0]!.outstanding));
        await sleep(200);
      }
    })();

    // All along: no snapshot may show a message stored while its queue row is still pending (the
    // row leaves in the transaction that stores the message). Matched by subject, read from the
    // queued raw message itself, so rows delivered before their 250 reached this process count too.
    let atomicitySamples = 0;
    let storedWhilePending = 0;
    const atomicity = (async () => {
      while (sampling) {
        storedWhilePending += await count(
          `select count(*) as n from inbound_queue q join message m
             on m.subject = substring(convert_from(q.raw, 'UTF8') from '(?:^|\n)Subject: ([^\r\n]*)')
           where q.status = 'pending'`,
        );
        atomicitySamples++;
        await sleep(5);
      }
    })();

    // The kills, in pairs spread over the sending: one at a random moment, then one armed on its
    // replacement, which starts with the backlog that piled up while the worker was down.
    const random = seededRandom(SEED + 1);
    const kills: { at: number; armed: boolean; held: number; downMs: number }[] = [];
    for (let k = 0; k < KILLS; k++) {
      const armed = k % 2 === 1;
      if (!armed) {
        const threshold = Math.floor((N * (k / 2 + 1)) / (Math.ceil(KILLS / 2) + 1));
        await until(`${threshold} messages answered`, () => answered >= threshold, 120_000);
        await sleep(Math.floor(random() * 1_000));
      }
      const workerId = `${hostname()}:${supervisor.proc.pid()}`;
      const heldBy = () =>
        count(`select count(*) as n from inbound_queue where status = 'pending' and locked_by = $1`, [workerId]);
      if (armed) {
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline && (await heldBy()) === 0) await sleep(2);
      }
      const at = Date.now();
      const downBefore = supervisor.downMs;
      // Rows the dead worker still held (claimed, not committed), counted as soon as it is gone:
      // due again when their lease ends, for the replacement.
      let held: Promise<number> = Promise.resolve(0);
      await supervisor.crash(() => (held = heldBy()));
      kills.push({ at: at - t0, armed, held: await held, downMs: supervisor.downMs - downBefore });
    }
    await sending;
    const sendingMs = Date.now() - t0;

    // The queue drains: no pending row within QUEUE_DRAIN_MS of the last send.
    const drainStart = Date.now();
    const pendingRows = () => count(`select count(*) as n from inbound_queue where status = 'pending'`);
    await until('an empty inbound queue', async () => (await pendingRows()) === 0, QUEUE_DRAIN_MS).catch(
      () => undefined,
    );
    const drainMs = Date.now() - drainStart;
    sampling = false;
    await Promise.all([sampler, atomicity]);

    const pending = await pendingRows();
    const failed = await count(`select count(*) as n from inbound_queue where status = 'failed'`);
    const stored = new Map<string, number>(); // `${address} ${subject}` -> copies in that mailbox
    const address = new Map(boxes.map((b) => [b.mailboxId, b.address]));
    for (const r of (
      await db.query<{ mailbox_id: string; subject: string; n: string }>(
        `select mailbox_id, subject, count(*) as n from message where mailbox_id = any($1) group by mailbox_id, subject`,
        [boxes.map((b) => b.mailboxId)],
      )
    ).rows)
      stored.set(`${address.get(r.mailbox_id)} ${r.subject}`, Number(r.n));
    const lost: string[] = [];
    let duplicated = 0;
    for (const s of ledger)
      for (const to of s.to) {
        const copies = stored.get(`${to} ${s.subject}`) ?? 0;
        if (copies === 0) lost.push(`${s.queueId} "${s.subject}" to ${to}`);
        duplicated += Math.max(0, copies - 1);
      }
    const storage = (
      await db.query<{ id: string; used: string; live: string }>(
        `select m.id, m.storage_used_bytes as used,
           coalesce((select sum(stored_bytes) from message where mailbox_id = m.id and deleted_at is null), 0) as live
         from mailbox m where m.id = any($1) order by m.id`,
        [boxes.map((b) => b.mailboxId)],
      )
    ).rows;
    const mismatched = storage.filter((r) => r.used !== r.live);
    const logs = supervisor.proc.logs();
    const retries = logs.filter((l) => l.includes('smtp.inbound_retry')).length;
    const heldTotal = kills.reduce((s, k) => s + k.held, 0);

    for (const l of lost.slice(0, 10)) console.log(`[inbound queue] lost: ${l}`);
    for (const r of mismatched) console.log(`[inbound queue] storage of ${r.id}: used ${r.used}, live ${r.live}`);
    for (const r of [...refused, ...notQueued].slice(0, 10)) console.log(`[inbound queue] not queued: ${r}`);
    console.log(
      `[inbound queue] ${ledger.length} queued of ${N} sent in ${sendingMs} ms; kills at ` +
        kills
          .map((k) => `${k.at} ms (${k.armed ? 'armed, ' : ''}${k.held} rows held, down ${k.downMs} ms)`)
          .join(', ') +
        `; drained ${drainMs} ms after the last send; ${retries} delivery retries logged; ` +
        `storage used/live ${storage.map((r) => `${r.used}/${r.live}`).join(', ')}; seed ${SEED}`,
    );

    const figures = [
      recordFigure({
        suite: SUITE,
        name: `messages acknowledged with 250 Queued as inq_…, of ${N} sent`,
        value: ledger.length,
        target: '> 0',
        pass: ledger.length > 0,
      }),
      zeroFigure(
        SUITE,
        'sends refused or answered without a queue id (intake is never killed)',
        refused.length + notQueued.length,
      ),
      zeroFigure(
        SUITE,
        `acknowledged copies (message × mailbox) not stored, across ${KILLS} worker kill -9`,
        lost.length,
      ),
      zeroFigure(SUITE, 'extra copies of an acknowledged message in one mailbox (duplicates)', duplicated),
      zeroFigure(
        SUITE,
        `sightings of a message stored while its queue row was still pending (${atomicitySamples} samples)`,
        storedWhilePending,
      ),
      zeroFigure(SUITE, 'queue rows failed (set aside undelivered)', failed),
      zeroFigure(SUITE, `queue rows still pending ${Math.round(QUEUE_DRAIN_MS / 1000)} s after the last send`, pending),
      zeroFigure(
        SUITE,
        'mailboxes whose storage_used_bytes ≠ sum of their live messages’ stored_bytes',
        mismatched.length,
      ),
      recordFigure({
        suite: SUITE,
        name: 'worker kill -9 performed (each followed by a restart)',
        value: kills.length,
        target: `= ${KILLS}`,
        pass: kills.length === KILLS && supervisor.restarts === KILLS,
      }),
      recordFigure({
        suite: SUITE,
        name: 'queue rows a killed worker held in flight (taken over after the lease)',
        value: heldTotal,
        target: '≥ 1',
        pass: heldTotal >= 1,
      }),
      recordFigure({
        suite: SUITE,
        name: 'most bytes seen reserved but not yet settled in the quota mailbox',
        value: maxReserved,
        target: '> 0',
        pass: maxReserved > 0,
      }),
    ];
    expect(figures.filter((x) => !x.pass).map((x) => `${x.name} = ${x.value} (target ${x.target})`)).toEqual([]);
    expect(lost).toEqual([]);
    expect(duplicated).toBe(0);
    expect(mismatched).toEqual([]);
  });
});
