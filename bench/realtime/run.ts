import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startDnsStub } from '../lib/dns-stub.js';
import { writeRatios } from '../lib/ratios.js';
import { table } from '../lib/measure.js';
import { freePort, redisServer, serve, stopProcess } from '../lib/processes.js';
import { cpuSeconds, openFilesLimit, rssMb } from '../lib/proc.js';
import { shippedNodeFlags } from '../lib/node-flags.js';
import { scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { ceiling, ClientProcess } from './infra.js';
import { nowMs, SmtpSender } from './smtp-sender.js';
import type { ClientSpec } from './clients.js';
import { configSchema } from '../../src/config/config.js';
import { ceilingStalls, describeWindow, serviceStalls, type Stalls } from './stalls.js';

// bench/realtime: end-to-end latency from inbound SMTP acceptance (end of DATA written to the
// MX listener) to `message.received` on every subscribed socket, 2 realtime processes (or
// BENCH_RT_SERVERS) sharing PostgreSQL and Redis, 100 mailboxes; side by side with as many bare
// Socket.IO servers fed the same payloads over HTTP. Latency and delivery ratio per client count,
// split per message into its first socket (the path to the emit) and its fan-out (last - first).
const CLIENTS = (process.env.BENCH_RT_CLIENTS ?? '1000,10000').split(',').map(Number);
const MAILBOXES = 100;
const RATE = Number(process.env.BENCH_RT_RATE ?? 20);
const SECONDS = Number(process.env.BENCH_RT_SECONDS ?? 15);
const CLIENT_PROCS = Number(process.env.BENCH_RT_CLIENT_PROCS ?? 4);
const SERVERS = Number(process.env.BENCH_RT_SERVERS ?? 2);
const SMTP_CONNECTIONS = 4;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;

interface Row {
  scenario: string;
  clients: number;
  messages: number;
  expected: number;
  delivered: string;
  'p50 ms': string;
  'p99 ms': string;
  'max ms': string;
  'p50/p99 from 250': string;
  /** Each message's first socket (the path up to the emit) and, per message, last minus first (the fan-out). */
  'p50/p99 first socket': string;
  'p50/p99 fan-out': string;
  /** Over the measured window, per server process (the service's api,smtp,worker first): the longest event-loop delay, and GC pauses of 10 ms or more (all GC, ms). */
  'loop max ms': string;
  'GC ≥ 10 ms (GC ms)': string;
  'server CPU s': string;
  /** CPU of the api,smtp,worker process a message, SMTP session to publish (the bare servers have none). */
  'intake+worker CPU ms/msg': string;
  /** Growth of both servers' VmRSS from before the connects to after the warm-up, per 1 000 sockets. */
  'server RSS MB/1k sockets': string;
  'connect s': string;
}
/** The server side of a phase, as the bench reads it. */
interface Servers {
  /** The processes holding the sockets (their CPU and memory). */
  pids: Array<number | undefined>;
  /** Reads every server process's stalls (stalls.ts); the service's api,smtp,worker process first. */
  stalls: () => Promise<Stalls[]>;
  /** The process that takes the mail and stores it (the service's api,smtp,worker); none for the bare servers. */
  pipelinePid?: number;
}
/** When a message was handed over: `start` (end of DATA, or the ceiling's POST) and `accepted` (the 250; the POST's answer). */
interface Sent {
  start: number;
  accepted: number;
}

/** Connects `n` clients (client i follows mailbox i % 100 on server i % 2), sends at RATE for SECONDS, measures. */
async function phase(
  name: string,
  n: number,
  urls: string[],
  mailboxes: Array<{ address: string; token: string }>,
  auth: (m: { address: string; token: string }) => Record<string, string>,
  emit: (k: number, mailbox: string) => Promise<Sent>,
  servers: Servers,
): Promise<Row> {
  const { pids: serverPids, stalls, pipelinePid } = servers;
  const procs = Array.from({ length: CLIENT_PROCS }, () => ClientProcess.start());
  try {
    const specs: ClientSpec[][] = procs.map(() => []);
    const mailboxOf: number[][] = procs.map(() => []);
    for (let i = 0; i < n; i++) {
      const m = i % MAILBOXES;
      specs[i % CLIENT_PROCS]!.push({ url: urls[i % urls.length]!, auth: auth(mailboxes[m]!) });
      mailboxOf[i % CLIENT_PROCS]!.push(m);
    }
    const rssBefore = serverPids.reduce<number>((a, pid) => a + rssMb(pid), 0);
    const t = Date.now();
    const ready = await Promise.all(procs.map((p, i) => p.connect(specs[i]!)));
    const connectS = (Date.now() - t) / 1000;
    const failed = ready.reduce((a, r) => a + r.failed, 0);
    if (failed)
      console.log(
        `${name}: ${failed} of ${n} clients failed to connect: ${ready.find((r) => r.firstError)?.firstError}`,
      );
    const perMailbox = new Array<number>(MAILBOXES).fill(0);
    for (let i = 0; i < n; i++) perMailbox[i % MAILBOXES]!++;

    // Warm-up on these very sockets (JIT, feeds, rooms): two seconds at the rate, not measured.
    for (let j = 0; j < RATE * 2; j++) {
      await Promise.all([emit(2_000_000 + j, mailboxes[j % MAILBOXES]!.address), sleep(1000 / RATE)]);
    }
    await sleep(500);
    const rssGrowth = serverPids.reduce<number>((a, pid) => a + rssMb(pid), 0) - rssBefore;
    const t0 = new Map<number, Sent>();
    const cpuBefore = serverPids.reduce<number>((a, pid) => a + cpuSeconds(pid), 0);
    const pipelineBefore = pipelinePid ? cpuSeconds(pipelinePid) : 0;
    const stallsBefore = await stalls();
    const pending: Array<Promise<void>> = [];
    const total = RATE * SECONDS;
    const start = nowMs();
    for (let k = 0; k < total; k++) {
      const due = start + (k * 1000) / RATE;
      const wait = due - nowMs();
      if (wait > 0) await sleep(wait);
      pending.push(
        emit(k, mailboxes[k % MAILBOXES]!.address).then(
          (at) => {
            t0.set(k, at);
          },
          (err: Error) => console.log(`${name}: message ${k}: ${err.message}`),
        ),
      );
    }
    await Promise.all(pending);
    const window = describeWindow(stallsBefore, await stalls());
    await sleep(3000); // stragglers
    const cpu = serverPids.reduce<number>((a, pid) => a + cpuSeconds(pid), 0) - cpuBefore;
    const pipelineCpu = pipelinePid ? cpuSeconds(pipelinePid) - pipelineBefore : NaN;
    const latencies: number[] = [];
    const fromAccepted: number[] = [];
    const seen = new Set<string>();
    const firstLast = new Map<number, [number, number]>();
    for (const [p, proc] of procs.entries()) {
      for (const [client, k, at] of await proc.collect()) {
        const sent = t0.get(k);
        if (sent === undefined || mailboxOf[p]![client] !== k % MAILBOXES) continue;
        if (seen.has(`${p}:${client}:${k}`)) continue; // a duplicate is not a second delivery
        seen.add(`${p}:${client}:${k}`);
        latencies.push(at - sent.start);
        fromAccepted.push(at - sent.accepted);
        const [first, last] = firstLast.get(k) ?? [at, at];
        firstLast.set(k, [Math.min(first, at), Math.max(last, at)]);
      }
    }
    let expected = 0;
    for (const k of t0.keys()) expected += perMailbox[k % MAILBOXES]!;
    latencies.sort((a, b) => a - b);
    fromAccepted.sort((a, b) => a - b);
    const firsts = [...firstLast].map(([k, [first]]) => first - t0.get(k)!.start).sort((a, b) => a - b);
    // BENCH_RT_DUMP=<prefix>: each message's timings (ms, `start` on the clock of nowMs), to line
    // up with timestamps taken elsewhere along the path.
    if (process.env.BENCH_RT_DUMP)
      writeFileSync(
        `${process.env.BENCH_RT_DUMP}-${name.split(' ')[0]}-${n}.json`,
        JSON.stringify(
          [...firstLast].map(([k, [first, last]]) => {
            const sent = t0.get(k)!;
            return {
              k,
              start: sent.start,
              accepted: sent.accepted - sent.start,
              first: first - sent.start,
              last: last - sent.start,
            };
          }),
        ),
      );
    const fanOuts = [...firstLast.values()].map(([first, last]) => last - first).sort((a, b) => a - b);
    return {
      scenario: name,
      clients: n,
      messages: t0.size,
      expected,
      delivered: `${((latencies.length / Math.max(expected, 1)) * 100).toFixed(2)}%`,
      'p50 ms': pct(latencies, 50).toFixed(1),
      'p99 ms': pct(latencies, 99).toFixed(1),
      'max ms': (latencies.at(-1) ?? NaN).toFixed(1),
      'p50/p99 from 250': `${pct(fromAccepted, 50).toFixed(1)} / ${pct(fromAccepted, 99).toFixed(1)}`,
      'p50/p99 first socket': `${pct(firsts, 50).toFixed(1)} / ${pct(firsts, 99).toFixed(1)}`,
      'p50/p99 fan-out': `${pct(fanOuts, 50).toFixed(1)} / ${pct(fanOuts, 99).toFixed(1)}`,
      'loop max ms': window.loopMax,
      'GC ≥ 10 ms (GC ms)': window.gc,
      'server CPU s': cpu.toFixed(1),
      'intake+worker CPU ms/msg': pipelinePid ? ((pipelineCpu * 1000) / Math.max(t0.size, 1)).toFixed(2) : '',
      'server RSS MB/1k sockets': ((rssGrowth / n) * 1000).toFixed(1),
      'connect s': connectS.toFixed(1),
    };
  } finally {
    for (const p of procs) p.close();
    await sleep(1000);
  }
}

async function main(): Promise<void> {
  // Each socket is a descriptor in a client process and in a server process: a limit below the
  // larger share fails connects midway with EMFILE, so say so before starting.
  const files = openFilesLimit();
  const most = Math.max(...CLIENTS);
  const needed = Math.ceil(most / Math.min(CLIENT_PROCS, SERVERS)) + 500;
  if (files < needed)
    throw new Error(
      `bench/realtime: ${most} sockets need about ${needed} open files in each of ${Math.min(CLIENT_PROCS, SERVERS)} processes; this shell allows ${files} (ulimit -n; past the hard limit it takes CAP_SYS_RESOURCE), or spread them: BENCH_RT_SERVERS, BENCH_RT_CLIENT_PROCS`,
    );
  const db = await scratchDatabase('mbx_bench_rt');
  const children = [];
  const dns = await startDnsStub({});
  try {
    // The service's processes and the bare servers run with the V8 flags the service ships with.
    const flags = shippedNodeFlags(readFileSync(path.resolve('package.json'), 'utf8')).join(' ');
    const nodeOptions: Record<string, string> = flags ? { NODE_OPTIONS: flags } : {};
    const redisPort = await freePort();
    children.push(await redisServer(redisPort));
    const [apiPort, mxPort, submissionPort] = await Promise.all(Array.from({ length: 3 }, freePort));
    // The realtime and bare servers' ports are picked just before each starts: picked up front, one
    // was taken meanwhile by an outgoing connection of the processes started before it (EADDRINUSE).
    const rtPorts: number[] = [];
    const ceilingPorts: number[] = [];
    const env = {
      ...nodeOptions,
      DATABASE_URL: db.url,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      MAILBOX_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'mbx-bench-rt-')),
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      DATABASE_POOL_MAX: '10',
      SMTP_MX_PORT: String(mxPort),
      SMTP_SUBMISSION_PORT: String(submissionPort),
      DNS_SERVERS: dns.server,
      SMTP_HOSTNAME: 'mx.bench.test',
      // One token per mailbox holds all of that mailbox's sockets here (up to max(CLIENTS)/MAILBOXES),
      // above the shipped per-token cap of 20, which guards a real deployment against one leaked token.
      MAX_SOCKETS_PER_TOKEN: String(Math.max(20, Math.ceil(Math.max(...CLIENTS) / MAILBOXES))),
    };
    // Migrate and declare 100 mailboxes with a token each, through the core.
    const mailboxes = await seedMailboxes(
      env,
      'rt.bench.test',
      Array.from({ length: MAILBOXES }, (_, i) => `m${String(i).padStart(3, '0')}`),
    );

    const service = await serve('api,smtp,worker', apiPort!, env);
    children.push(service);
    const realtimes = [];
    for (let i = 0; i < SERVERS; i++) {
      rtPorts.push(await freePort());
      realtimes.push(
        await serve('realtime', rtPorts[i]!, {
          ...env,
          MAILBOX_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'mbx-bench-rt-')),
        }),
      );
    }
    const ceilings = [];
    for (let i = 0; i < SERVERS; i++) {
      ceilingPorts.push(await freePort());
      ceilings.push(await ceiling(ceilingPorts[i]!, nodeOptions));
    }
    children.push(...realtimes, ...ceilings);
    const senders = await Promise.all(Array.from({ length: SMTP_CONNECTIONS }, () => SmtpSender.open(mxPort!)));
    // Sequential per connection (SMTP has one transaction at a time): a simple chain per sender.
    const chains: Array<Promise<unknown>> = senders.map(() => Promise.resolve());
    const viaSmtp = (k: number, to: string): Promise<Sent> => {
      const i = k % SMTP_CONNECTIONS;
      const next = chains[i]!.catch(() => undefined)
        .then(() => senders[i]!.send('sender@remote.bench.example', to, `rt-bench ${k}`))
        .then((r) => ({ start: r.dataEnd, accepted: r.accepted }));
      chains[i] = next;
      return next;
    };
    const ceilingUrls = ceilingPorts.map((p) => `http://127.0.0.1:${p}`);
    const viaCeiling = async (k: number, to: string): Promise<Sent> => {
      const event = {
        eventId: String(k + 1),
        type: 'message.received',
        mailboxId: 'mbx_ceiling',
        mailboxAddress: to,
        occurredAtTs: Date.now(),
        data: {
          messageId: `msg_${k}`,
          threadId: `thr_${k}`,
          direction: 'inbound',
          subject: `rt-bench ${k}`,
          fromAddress: 'sender@remote.bench.example',
          fromDisplayName: 'Bench',
          toAddresses: [to],
          ccAddresses: [],
          attachmentCount: 0,
          inReplyToMessageId: null,
          receivedAtTs: Date.now(),
        },
      };
      const at = nowMs();
      await Promise.all(
        ceilingUrls.map((u) =>
          fetch(`${u}/emit`, { method: 'POST', body: JSON.stringify({ mailboxAddress: to, event }) }),
        ),
      );
      return { start: at, accepted: nowMs() };
    };
    // Warm-up: JIT, pools, feeds.
    for (let k = 0; k < 20; k++) await viaSmtp(1_000_000 + k, mailboxes[k % MAILBOXES]!.address);

    const rows: Row[] = [];
    const rtUrls = rtPorts.map((p) => `http://127.0.0.1:${p}`);
    for (const n of CLIENTS) {
      rows.push(
        await phase(
          `service (SMTP → ${SERVERS} realtime procs)`,
          n,
          rtUrls,
          mailboxes,
          (m) => ({ token: m.token }),
          viaSmtp,
          {
            pids: realtimes.map((c) => c.pid),
            stalls: () => Promise.all([apiPort!, ...rtPorts].map((p) => serviceStalls(`http://127.0.0.1:${p}`))),
            pipelinePid: service.pid,
          },
        ),
      );
      rows.push(
        await phase(
          `ceiling (bare Socket.IO ×${SERVERS})`,
          n,
          ceilingUrls,
          mailboxes,
          (m) => ({ mailboxAddress: m.address }),
          viaCeiling,
          { pids: ceilings.map((c) => c.pid), stalls: () => Promise.all(ceilingUrls.map(ceilingStalls)) },
        ),
      );
    }
    for (const s of senders) s.close();
    console.log(
      `\nbench/realtime — ${RATE} inbound msgs/s for ${SECONDS} s, ${MAILBOXES} mailboxes, ${SERVERS} realtime processes, ${CLIENT_PROCS} client processes, open files ${files} a process, node ${process.version} ${flags}\n`,
    );
    console.log(table(rows as unknown as Array<Record<string, string | number>>));
    const at1k = rows.find((r) => r.clients === 1000 && r.scenario.startsWith('service'));
    if (at1k)
      console.log(
        `\ntarget: p99 < 50 ms at 1 000 clients: ${at1k['p99 ms']} ms ${Number(at1k['p99 ms']) < 50 ? 'MET' : 'NOT MET'}; 100% delivered: ${at1k.delivered} ${at1k.delivered === '100.00%' ? 'MET' : 'NOT MET'}`,
      );
    // Headline for the summary table: event latency p99 beside bare Socket.IO fed the same payloads.
    writeRatios(
      'realtime',
      CLIENTS.flatMap((n) => {
        const ours = rows.find((r) => r.clients === n && r.scenario.startsWith('service'));
        const bare = rows.find((r) => r.clients === n && r.scenario.startsWith('ceiling'));
        if (!ours || !bare) return [];
        return [
          {
            work: `event p99 latency, ${n} sockets`,
            ours: Number(ours['p99 ms']),
            baseline: Number(bare['p99 ms']),
            baselineName: `bare Socket.IO ×${SERVERS}`,
            unit: 'ms',
            goal: null,
            higherIsBetter: false,
          },
        ];
      }),
    );
    // The intake settings the service ran with, read from the environment as the service reads them.
    const intake = configSchema.pick({ SMTP_INBOUND_QUEUE: true, SMTP_INBOUND_DIRECT_BELOW: true }).parse(process.env);
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/realtime-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.json`,
      JSON.stringify(
        {
          rate: RATE,
          seconds: SECONDS,
          servers: SERVERS,
          clientProcesses: CLIENT_PROCS,
          openFiles: files,
          smtpInboundQueue: intake.SMTP_INBOUND_QUEUE,
          smtpInboundDirectBelow: intake.SMTP_INBOUND_DIRECT_BELOW,
          rows,
        },
        null,
        2,
      ),
    );
  } finally {
    for (const c of children.reverse()) await stopProcess(c);
    await dns.close();
    await db.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
