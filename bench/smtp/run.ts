import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { selfSignedCertificate } from '../../src/channels/smtp/self-signed-cert.js';
import { table } from '../lib/measure.js';
import { shippedNodeFlags } from '../lib/node-flags.js';
import { writeRatios, type RatioRow } from '../lib/ratios.js';
import { script, serve, stopProcess } from '../lib/processes.js';
import { scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { startDnsStub } from '../lib/dns-stub.js';
import { cpuMeter, treeCpuMeter } from './cpu.js';
import { diskSyncLatency, newFileSyncRate, postgresDisk } from '../lib/disk-sync.js';
import { DRAIN_PROCESSES, measureDeferredWork } from './deferred-work.js';
import { measureBurst } from './burst.js';
import { combineRounds, runLoad, SENDER_RECORDS, type LoadFigures, type LoadOptions, type LoadRound } from './load.js';
import { postfixUnavailable, startPostfix, startSmtpSink, waitForGreeting } from './postfix.js';

// bench/smtp: 8 and 32 concurrent clients sending 10 KB messages, to submission (587: STARTTLS +
// AUTH) and to the inbound port (25), each side by side with Postfix's smtpd writing into its queue
// (fsync on), Postfix's smtp-sink (accepts and discards: the ceiling) and smtp-server discarding
// (the Node library's own ceiling), same client and load.
const SECONDS = Number(process.env.BENCH_SMTP_SECONDS ?? 10);
/**
 * Each row's seconds are split into this many rounds, the rows of one client count taking turns
 * (ours, the sinks, Postfix, ours again...): a few seconds in which the machine slows down then
 * touch every row a little instead of one row a lot, so the ratios hold from run to run.
 */
const ROUNDS = Math.max(1, Number(process.env.BENCH_SMTP_ROUNDS ?? 3));
/** Client counts, comma-separated: each scenario runs once per count. */
const CLIENT_COUNTS = (process.env.BENCH_SMTP_CLIENTS ?? '8,32').split(',').map(Number);
const CLIENTS = Math.max(...CLIENT_COUNTS);
/** The steady load at Postfix's queue rate that follows the table (BENCH_SMTP_BURST_RATE sets the rate). */
const BURST_SECONDS = Number(process.env.BENCH_SMTP_BURST_SECONDS ?? 60);
const BASE = Number(process.env.BENCH_SMTP_PORT_BASE ?? 26500);
/** `submission` or `inbound`: run that port's rows only (a profile of one port, an A/B). */
const ONLY = process.env.BENCH_SMTP_ONLY;
const PORTS = {
  http: BASE,
  submission: BASE + 87,
  mx: BASE + 25,
  postfix: BASE + 126,
  sink: BASE + 127,
  nodeSink: BASE + 128,
};

async function main(): Promise<void> {
  const db = await scratchDatabase('mbx_bench');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-bench-smtp-'));
  const pfDir = mkdtempSync(path.join(tmpdir(), 'mbx-bench-postfix-'));
  const dns = await startDnsStub(SENDER_RECORDS);
  const children: ChildProcess[] = [];
  const stops: Array<() => Promise<void>> = [];
  try {
    // The service's processes (intake, the drains, the burst's roles) and the Node discard sink run
    // with the V8 flags the service ships with (package.json's start script, the image), as in
    // bench/http and bench/realtime.
    const shipped = shippedNodeFlags(readFileSync(path.resolve('package.json'), 'utf8')).join(' ');
    const env = {
      ...(shipped ? { NODE_OPTIONS: shipped } : {}),
      DATABASE_URL: db.url,
      MAILBOX_DATA_DIR: dataDir,
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      HOST: '127.0.0.1',
      PORT: String(PORTS.http),
      SMTP_SUBMISSION_PORT: String(PORTS.submission),
      SMTP_MX_PORT: String(PORTS.mx),
      SMTP_HOSTNAME: 'mail.bench.test',
      SEND_RATE_LIMIT_PER_MINUTE: '100000000',
      SMTP_MAX_CONNECTIONS_PER_CLIENT: '1000',
      DNS_SERVERS: dns.server,
      // The shipped default (info): our processes log each message they take, as Postfix does (the
      // lines go to /dev/null here, Postfix's to a file through its postlogd).
      LOG_LEVEL: 'info',
      DATABASE_POOL_MAX: '10',
    };
    // One mailbox per client: agents submit as themselves (and the world writes to several).
    const tokens = (
      await seedMailboxes(
        env,
        'bench.test',
        Array.from({ length: CLIENTS }, (_, i) => `agent${i}`),
      )
    ).map((m) => m.token);
    // api for the readiness probe; smtp for both listeners. No worker: like Postfix's held queue,
    // accepted mail stays queued (port 25's in the inbound queue, 587's external mail in the
    // outbox), so only acceptance is measured; the delivery of port 25's queue is measured after.
    // Flow control is off here (it would hold a queue that nothing drains at its high water); the
    // burst below runs as deployed, with it.
    const server = await serve('api,smtp', PORTS.http, { ...env, SMTP_IN_FLOW_DELAY: '0' });
    children.push(server);
    await waitForGreeting(PORTS.submission);

    // BENCH_SMTP_POSTFIX=0 runs our rows only (profiling, A/B of a change).
    const missing = process.env.BENCH_SMTP_POSTFIX === '0' ? 'BENCH_SMTP_POSTFIX=0' : postfixUnavailable();
    let postfixMaster: number | null = null;
    if (!missing) {
      const pf = await startPostfix(
        pfDir,
        PORTS.postfix,
        await selfSignedCertificate('postfix.bench.test').then((c) => ({ cert: c.certPem, key: c.keyPem })),
      );
      stops.push(pf.stop);
      postfixMaster = pf.masterPid();
      children.push(await startSmtpSink(PORTS.sink));
    } else console.log(`Postfix rows skipped: ${missing}`);

    // smtp-server discarding (bench/smtp/node-sink.ts): the ceiling of the library our channel uses.
    const sinkCert = await selfSignedCertificate('node-sink.bench.test');
    const nodeSink = spawn(process.execPath, script('bench/smtp/node-sink'), {
      env: {
        ...process.env,
        ...(shipped ? { NODE_OPTIONS: shipped } : {}),
        SINK_PORT: String(PORTS.nodeSink),
        SINK_KEY: sinkCert.keyPem,
        SINK_CERT: sinkCert.certPem,
      },
      stdio: 'ignore',
    });
    children.push(nodeSink);
    await waitForGreeting(PORTS.nodeSink);

    const submission = {
      starttls: true,
      identity: (i: number) => ({
        from: `agent${i}@bench.test`,
        to: 'someone@remote.bench',
        auth: { user: `agent${i}@bench.test`, pass: tokens[i]! },
      }),
    };
    const inbound = {
      starttls: false,
      identity: (i: number) => ({ from: 'news@sender.bench', to: `agent${i}@bench.test` }),
    };
    const scenarios: Array<{
      group: string;
      name: string;
      port: number;
      o: Omit<LoadOptions, 'port' | 'clients' | 'seconds'>;
    }> = [
      { group: 'submission', name: 'mailbox-service 587 (PostgreSQL)', port: PORTS.submission, o: submission },
      { group: 'submission', name: 'smtp-server sink (Node, discard)', port: PORTS.nodeSink, o: submission },
      ...(missing
        ? []
        : [
            { group: 'submission', name: 'Postfix smtpd → queue (fsync)', port: PORTS.postfix, o: submission },
            { group: 'submission', name: 'Postfix smtp-sink (discard)', port: PORTS.sink, o: submission },
          ]),
      { group: 'inbound', name: 'mailbox-service 25 (PostgreSQL)', port: PORTS.mx, o: inbound },
      { group: 'inbound', name: 'smtp-server sink (Node, discard)', port: PORTS.nodeSink, o: inbound },
      ...(missing
        ? []
        : [
            { group: 'inbound', name: 'Postfix smtpd → queue (fsync)', port: PORTS.postfix, o: inbound },
            { group: 'inbound', name: 'Postfix smtp-sink (discard)', port: PORTS.sink, o: inbound },
          ]),
    ];
    const results: Array<
      {
        group: string;
        name: string;
        clients: number;
        serverCpuMsPerMessage: number | null;
        postgresCpuMsPerMessage: number | null;
      } & LoadFigures
    > = [];
    for (const clients of CLIENT_COUNTS) {
      const rows = scenarios.filter((x) => !ONLY || x.group === ONLY);
      // Per row: its rounds, and the CPU of its server (ours or Postfix's; null for the sinks) and of PostgreSQL.
      const taken = rows.map(() => ({ rounds: [] as LoadRound[], server: null as number | null, postgres: 0 }));
      for (let round = 0; round < ROUNDS; round++)
        for (const [i, sc] of rows.entries()) {
          const load = { ...sc.o, port: sc.port, clients };
          if (round === 0) await runLoad({ ...load, seconds: 2 }); // warm-up, discarded
          const ours = sc.name.startsWith('mailbox-service');
          const meter = ours ? cpuMeter(server.pid!, db.url.slice(db.url.lastIndexOf('/') + 1)) : null;
          // Postfix's queue: every daemon of the instance (smtpd, cleanup, trivial-rewrite, qmgr, postlogd, ...).
          const postfixMeter =
            sc.name.startsWith('Postfix smtpd') && postfixMaster ? treeCpuMeter(postfixMaster) : null;
          const t = taken[i]!;
          t.rounds.push(await runLoad({ ...load, seconds: Math.max(1, SECONDS / ROUNDS) }));
          const cpu = meter?.() ?? (postfixMeter ? { server: postfixMeter(), postgres: 0 } : null);
          if (cpu) {
            t.server = (t.server ?? 0) + cpu.server;
            t.postgres += cpu.postgres;
          }
        }
      for (const [i, sc] of rows.entries()) {
        const t = taken[i]!;
        const figures = combineRounds(t.rounds);
        const perMessage = (ms: number) => Number((ms / Math.max(1, figures.messages)).toFixed(2));
        const ours = sc.name.startsWith('mailbox-service');
        const serverCpu = t.server === null ? null : perMessage(t.server);
        const postgresCpu = ours ? perMessage(t.postgres) : null;
        results.push({
          group: sc.group,
          name: sc.name,
          clients,
          ...figures,
          serverCpuMsPerMessage: serverCpu,
          postgresCpuMsPerMessage: postgresCpu,
        });
        console.log(
          `${sc.group.padEnd(10)} ${String(clients).padStart(3)} ${sc.name.padEnd(34)} ${String(figures.rate).padStart(6)} msg/s  p99 ${figures.p99} ms${serverCpu === null ? '' : `  CPU/msg: server ${serverCpu} ms${postgresCpu === null ? '' : `, PostgreSQL ${postgresCpu} ms`}`}  rounds ${figures.rounds.join(' / ')}${figures.errors ? `  errors ${figures.errors}: ${figures.firstError}` : ''}`,
        );
      }
    }
    const deferred = await measureDeferredWork(
      { ...env, MAILBOX_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'mbx-bench-drain-')) },
      db.url,
      db.url.slice(db.url.lastIndexOf('/') + 1),
    );
    const delivery = deferred.inboundDelivery;
    console.log(
      `\ninbound delivery behind the 250 (the worker's pass over port 25's queue): ${delivery.messages} messages at ${delivery.rate} msg/s, worker CPU ${delivery.workerCpuMsPerMessage} ms/msg, PostgreSQL CPU ${delivery.postgresCpuMsPerMessage} ms/msg`,
    );
    const written = deferred.submissionWrite;
    console.log(
      `submissions written behind the 250 (the worker's pass over port 587's queue): ${written.messages} messages at ${written.rate} msg/s, worker CPU ${written.workerCpuMsPerMessage} ms/msg, PostgreSQL CPU ${written.postgresCpuMsPerMessage} ms/msg`,
    );
    for (const [name, pass] of [
      ['inbound delivery', delivery],
      ['submission writes', written],
    ] as const)
      if (pass.backends)
        console.log(
          `  ${name}, PostgreSQL backends (${pass.backends.samples} samples): active ${pass.backends.active}%, waiting on a lock ${pass.backends.lock}%, on the WAL or I/O ${pass.backends.io}%, idle in transaction ${pass.backends.idleInTransaction}%, idle ${pass.backends.idle}%`,
        );
    for (const [group, port, behind] of [
      ['inbound', 25, delivery],
      ['submission', 587, written],
    ] as const)
      for (const r of results.filter((x) => x.group === group && x.name.startsWith('mailbox-service')))
        console.log(
          `  port ${port} with ${r.clients} clients, intake and the worker sharing this machine: about ${Math.round(1 / (1 / r.rate + 1 / Math.max(1, behind.rate)))} msg/s stored (1 / (1/intake + 1/worker))`,
        );
    const indexing = deferred.search;
    console.log(
      `search indexing left by intake (the worker's pass, off the 250 path): ${indexing.messages} messages at ${indexing.rate} msg/s, PostgreSQL CPU ${indexing.postgresCpuMsPerMessage} ms/msg`,
    );
    const reply = deferred.replyText;
    console.log(
      `reply text left by intake (the worker's pass, inbound messages): ${reply.messages} messages at ${reply.rate} msg/s, worker CPU ${reply.workerCpuMsPerMessage} ms/msg, PostgreSQL CPU ${reply.postgresCpuMsPerMessage} ms/msg`,
    );
    // Both sides wait for a durable write before their 250: the disk's sync latency says which kind of disk this run had.
    const disk = await postgresDisk(db.url);
    const sync = { ...diskSyncLatency(disk), newFiles: await newFileSyncRate(disk) };
    console.log(
      `\nbench/smtp — ${CLIENT_COUNTS.join(' and ')} clients, 10 KB messages, ${SECONDS} s per row in ${ROUNDS} rounds, node ${process.version} ${shipped}; submission clients use STARTTLS and AUTH where offered`,
    );
    console.log(
      `disk sync latency (4 KiB write + fdatasync, 200 times, in ${sync.where}): p50 ${sync.p50Ms} ms, p99 ${sync.p99Ms} ms\n` +
        `new files made durable as Postfix queues (create, 10 KiB, fsync; ${sync.newFiles.writers} writers at once): ` +
        `${sync.newFiles.filesPerSecond} files/s, p50 ${sync.newFiles.p50Ms} ms, p99 ${sync.newFiles.p99Ms} ms\n`,
    );
    console.log(
      table(
        results.map((r) => ({
          port: r.group,
          clients: r.clients,
          server: r.name,
          'msg/s': r.rate,
          'p50 ms': r.p50,
          'p99 ms': r.p99,
          'server CPU ms/msg': r.serverCpuMsPerMessage ?? '',
          'PostgreSQL CPU ms/msg': r.postgresCpuMsPerMessage ?? '',
          messages: r.messages,
          errors: r.errors,
        })),
      ),
    );
    const ratios: RatioRow[] = [];
    for (const clients of CLIENT_COUNTS)
      for (const group of ['submission', 'inbound']) {
        const row = (prefix: string) =>
          results.find((r) => r.clients === clients && r.group === group && r.name.startsWith(prefix));
        const ours = row('mailbox-service');
        const postfix = row('Postfix smtpd');
        if (!ours || !postfix) continue;
        console.log(
          `target (${group}, ${clients} clients): at least Postfix's rate: ${ours.rate} vs ${postfix.rate} msg/s — ${ours.rate >= postfix.rate ? 'MET' : 'NOT MET'}`,
        );
        ratios.push({
          work: `SMTP ${group === 'submission' ? 'submission 587' : 'inbound 25'}, ${clients} clients, 10 KB`,
          ours: ours.rate,
          baseline: postfix.rate,
          baselineName: 'Postfix smtpd → queue (fsync)',
          unit: 'msg/s',
          goal: 1.0,
          higherIsBetter: true,
        });
      }
    // The worker behind the 250 against the rate Postfix queues at (8 clients, same run): what is
    // accepted must be stored as fast, or the queue grows.
    const postfixQueue = (group: string) =>
      results.find(
        (r) => r.clients === Math.min(...CLIENT_COUNTS) && r.group === group && r.name.startsWith('Postfix smtpd'),
      );
    for (const [work, figures, group] of [
      ['inbound delivery behind the 250', delivery, 'inbound'],
      ['submission write behind the 250', written, 'submission'],
      ['search indexing behind the 250', indexing, 'inbound'],
      ['reply text behind the 250', reply, 'inbound'],
    ] as const) {
      const postfix = postfixQueue(group);
      if (!postfix) continue;
      console.log(
        `target (${work}, ${DRAIN_PROCESSES} worker processes): at least Postfix's queue rate: ${figures.rate} vs ${postfix.rate} msg/s — ${figures.rate >= postfix.rate ? 'MET' : 'NOT MET'}`,
      );
      ratios.push({
        work: `${work}, ${DRAIN_PROCESSES} worker processes`,
        ours: figures.rate,
        baseline: postfix.rate,
        baselineName: `Postfix smtpd → queue (fsync), ${postfix.clients} clients`,
        unit: 'msg/s',
        goal: 1.0,
        higherIsBetter: true,
      });
    }
    // A steady load on port 25 at Postfix's queue rate with worker processes storing behind it.
    const burstRate = Number(process.env.BENCH_SMTP_BURST_RATE ?? postfixQueue('inbound')?.rate ?? 0);
    const burst =
      burstRate > 0 && ONLY !== 'submission'
        ? await measureBurst({
            env,
            load: { ...inbound, clients: Math.min(...CLIENT_COUNTS) },
            domain: 'bench.test',
            rate: burstRate,
            seconds: BURST_SECONDS,
            ...(process.env.BENCH_SMTP_BURST_HIGH_WATER
              ? { highWater: Number(process.env.BENCH_SMTP_BURST_HIGH_WATER) }
              : {}),
            ports: {
              http: PORTS.http + 200,
              mx: PORTS.mx + 200,
              workers: Array.from({ length: DRAIN_PROCESSES }, (_, i) => PORTS.http + 201 + i),
            },
          }).catch((err: unknown) => {
            // The table and the passes above are kept whatever happens to the burst.
            console.log(`burst failed: ${(err as Error).message}`);
            return null;
          })
        : null;
    if (burst)
      console.log(
        `\nburst: port 25 at ${burst.targetRate} msg/s for ${BURST_SECONDS} s (${burst.load.rate} accepted/s, p99 ${burst.load.p99} ms, ${burst.load.errors} errors), ${burst.workerProcesses} worker processes storing: queue depth max ${burst.maxDepth}, growth over the second half ${burst.depthGrowthPerSecond}/s (high water ${burst.highWater}; MAIL FROMs held until it drained ${burst.flowWaits.drained}, for the whole delay ${burst.flowWaits.delayed}), empty ${burst.drainSeconds ?? 'not within 120'} s after the end\n  depth each second: ${burst.depth.join(' ')}`,
      );
    if (ratios.length) writeRatios('smtp', ratios);
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/smtp-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.json`,
      JSON.stringify(
        {
          clients: CLIENT_COUNTS,
          seconds: SECONDS,
          diskSync: sync,
          results,
          inboundDelivery: delivery,
          submissionWrite: written,
          indexing,
          replyText: deferred.replyText,
          drainProcesses: DRAIN_PROCESSES,
          burst,
        },
        null,
        2,
      ),
    );
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
    for (const c of children) await stopProcess(c);
    await dns.close();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
    // BENCH_KEEP=1 keeps the Postfix instance directory (its postfix.log) for inspection.
    if (!process.env.BENCH_KEEP) rmSync(pfDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
