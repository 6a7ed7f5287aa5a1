import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startDnsStub } from '../lib/dns-stub.js';
import { table } from '../lib/measure.js';
import { freePort, redisServer, serve, stopProcess } from '../lib/processes.js';
import { rssMb } from '../lib/proc.js';
import { scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { io, type Socket } from 'socket.io-client';
import { nowMs, SmtpSender } from '../realtime/smtp-sender.js';

// bench/mcp-events: latency from the end of DATA on port 25 to the MCP events occurrence, pushed
// on an `events/stream` (held on a separate api process) and POSTed to an `events/subscribe`
// webhook (by the webhook worker), at each subscription count; and the api process's RSS per held
// stream. 100 mailboxes, subscriptions spread evenly over them. PostgreSQL + Redis. The baseline,
// in the same run and for the same messages: as many Socket.IO connections to a realtime process
// (the push the service already had), one per subscription.
const SUBS = (process.env.BENCH_MCP_SUBS ?? '100,1000').split(',').map(Number);
const MAILBOXES = Number(process.env.BENCH_MCP_MAILBOXES ?? 100);
const MESSAGES = Number(process.env.BENCH_MCP_MESSAGES ?? 100);
const RATE = Number(process.env.BENCH_MCP_RATE ?? 10);
const MODERN = '2026-07-28';
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;

interface Row {
  mode: string;
  subscriptions: number;
  messages: number;
  expected: number;
  delivered: string;
  'p50 ms': string;
  'p99 ms': string;
  'max ms': string;
  'RSS per stream KiB': string;
}

const rpc = (url: string, token: string, method: string, params: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${url}/mcp`, {
    method: 'POST',
    signal: signal ?? null,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });

/** Arrival times per message subject: one entry per subscription that received it. */
type Arrivals = Map<string, number[]>;
const record = (arrivals: Arrivals, body: { data?: { data?: { subject?: string } } }) => {
  const subject = body.data?.data?.subject;
  if (!subject) return;
  const at = nowMs();
  const list = arrivals.get(subject);
  if (list) list.push(at);
  else arrivals.set(subject, [at]);
};

/** Opens one held events/stream and feeds each occurrence to `arrivals`. */
async function holdStream(url: string, token: string, arrivals: Arrivals, signal: AbortSignal): Promise<void> {
  const res = await rpc(url, token, 'events/stream', { name: 'message.received', cursor: null }, signal);
  if (res.status !== 200 || !res.body) throw new Error(`events/stream: HTTP ${res.status}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let active: () => void = () => undefined;
  const ready = new Promise<void>((r) => (active = r));
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const data = buffer
            .slice(0, end)
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5))
            .join('');
          buffer = buffer.slice(end + 2);
          if (!data) continue;
          const message = JSON.parse(data) as { method?: string; params?: unknown };
          if (message.method === 'notifications/events/active') active();
          if (message.method === 'notifications/events/event') record(arrivals, message.params as never);
        }
      }
    } catch {
      // aborted at the end of the phase
    }
  })();
  await ready;
}

async function sendAll(
  senders: SmtpSender[],
  mailboxes: Array<{ address: string }>,
  tag: string,
): Promise<Map<string, number>> {
  const sent = new Map<string, number>();
  for (let k = 0; k < MESSAGES; k++) {
    const subject = `${tag}-${k}`;
    const [r] = await Promise.all([
      senders[k % senders.length]!.send('sender@remote.bench.example', mailboxes[k % MAILBOXES]!.address, subject),
      sleep(1000 / RATE),
    ]);
    sent.set(subject, r.dataEnd);
  }
  return sent;
}

function row(mode: string, n: number, sent: Map<string, number>, arrivals: Arrivals, rssPerStream = ''): Row {
  const perMailbox = n / MAILBOXES;
  const latencies: number[] = [];
  for (const [subject, start] of sent) for (const at of arrivals.get(subject) ?? []) latencies.push(at - start);
  latencies.sort((a, b) => a - b);
  const expected = sent.size * perMailbox;
  return {
    mode,
    subscriptions: n,
    messages: sent.size,
    expected,
    delivered: `${((latencies.length / Math.max(expected, 1)) * 100).toFixed(2)}%`,
    'p50 ms': pct(latencies, 50).toFixed(1),
    'p99 ms': pct(latencies, 99).toFixed(1),
    'max ms': (latencies.at(-1) ?? NaN).toFixed(1),
    'RSS per stream KiB': rssPerStream,
  };
}

/** Waits until every expected arrival came, or 15 s passed after the last send. */
async function drain(arrivals: Arrivals, expected: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  const count = () => [...arrivals.values()].reduce((a, l) => a + l.length, 0);
  while (count() < expected && Date.now() < deadline) await sleep(100);
}

/** `n` Socket.IO connections to the realtime hub, spread over the mailboxes like the subscriptions. */
async function holdSockets(url: string, tokens: string[], n: number, arrivals: Arrivals): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let i = 0; i < n; i += 50)
    await Promise.all(
      Array.from(
        { length: Math.min(50, n - i) },
        (_, j) =>
          new Promise<void>((resolve, reject) => {
            const socket = io(url, {
              path: '/hubs/mailbox-events',
              transports: ['websocket'],
              forceNew: true,
              reconnection: false,
              auth: { token: tokens[(i + j) % tokens.length]! },
            });
            sockets.push(socket);
            socket.on('message.received', (event: { data?: { subject?: string } }) =>
              record(arrivals, { data: event }),
            );
            socket.once('subscription.ready', () => resolve());
            socket.once('connect_error', (err: Error) => reject(err));
          }),
      ),
    );
  return sockets;
}

async function main(): Promise<void> {
  const db = await scratchDatabase('mbx_bench_mcpev');
  const children = [];
  const dns = await startDnsStub({});
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      record(hookArrivals, JSON.parse(Buffer.concat(chunks).toString('utf8')) as never);
      res.writeHead(204).end();
    });
  });
  let hookArrivals: Arrivals = new Map();
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  try {
    const redisPort = await freePort();
    children.push(await redisServer(redisPort));
    const [mailPort, streamPort, mxPort, submissionPort, rtPort] = await Promise.all(
      Array.from({ length: 5 }, freePort),
    );
    const env = {
      DATABASE_URL: db.url,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      MAILBOX_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'mbx-bench-mcpev-')),
      MAILBOX_SECRET_KEY: randomBytes(32).toString('hex'),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      DATABASE_POOL_MAX: '10',
      SMTP_MX_PORT: String(mxPort),
      SMTP_SUBMISSION_PORT: String(submissionPort),
      DNS_SERVERS: dns.server,
      SMTP_HOSTNAME: 'mx.bench.test',
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      WORKER_POLL_INTERVAL: '200ms',
      WEBHOOK_CONCURRENCY: '16',
    };
    const mailboxes = await seedMailboxes(
      env,
      'mcpev.bench.test',
      Array.from({ length: MAILBOXES }, (_, i) => `m${String(i).padStart(3, '0')}`),
    );
    children.push(await serve('api,smtp,worker', mailPort!, env));
    // One token per mailbox holds every stream of its mailbox, above the shipped per-token cap.
    const streams = await serve('api', streamPort!, {
      ...env,
      MAILBOX_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'mbx-bench-mcpev-')),
      MAX_EVENT_STREAMS_PER_TOKEN: String(Math.max(20, Math.ceil(Math.max(...SUBS) / MAILBOXES))),
    });
    children.push(streams);
    // And every socket of its mailbox, above MAX_SOCKETS_PER_TOKEN.
    const realtime = await serve('realtime', rtPort!, {
      ...env,
      MAILBOX_DATA_DIR: mkdtempSync(path.join(tmpdir(), 'mbx-bench-mcpev-')),
      MAX_SOCKETS_PER_TOKEN: String(Math.max(20, Math.ceil(Math.max(...SUBS) / MAILBOXES))),
    });
    children.push(realtime);
    const streamUrl = `http://127.0.0.1:${streamPort}`;
    const mailUrl = `http://127.0.0.1:${mailPort}`;
    const senders = await Promise.all(Array.from({ length: 4 }, () => SmtpSender.open(mxPort!)));
    const rows: Row[] = [];
    for (const n of SUBS) {
      // Baseline: n Socket.IO connections on the realtime process, the same messages.
      const socketArrivals: Arrivals = new Map();
      const sockets = await holdSockets(
        `http://127.0.0.1:${rtPort}`,
        mailboxes.map((m) => m.token),
        n,
        socketArrivals,
      );
      await sleep(1000);
      const socketSent = await sendAll(senders, mailboxes, `socket${n}`);
      await drain(socketArrivals, socketSent.size * (n / MAILBOXES));
      rows.push(row('Socket.IO (baseline, same run)', n, socketSent, socketArrivals));
      for (const socket of sockets) socket.close();
      await sleep(1000);

      // Push: n held streams on the api process that takes no mail.
      const arrivals: Arrivals = new Map();
      const abort = new AbortController();
      const before = rssMb(streams.pid);
      for (let i = 0; i < n; i += 50)
        await Promise.all(
          Array.from({ length: Math.min(50, n - i) }, (_, j) =>
            holdStream(streamUrl, mailboxes[(i + j) % MAILBOXES]!.token, arrivals, abort.signal),
          ),
        );
      await sleep(1000);
      const perStream = ((rssMb(streams.pid) - before) * 1024) / n;
      const sent = await sendAll(senders, mailboxes, `push${n}`);
      await drain(arrivals, sent.size * (n / MAILBOXES));
      rows.push(row('events/stream (push)', n, sent, arrivals, perStream.toFixed(1)));
      abort.abort();
      await sleep(1000);

      // Webhook: n subscriptions delivered by the worker to a local receiver.
      hookArrivals = new Map();
      const ids: Array<{ token: string; url: string }> = [];
      for (let i = 0; i < n; i++) {
        const m = mailboxes[i % MAILBOXES]!;
        const url = `${hook}?n=${n}&i=${i}`;
        const res = await rpc(mailUrl, m.token, 'events/subscribe', {
          name: 'message.received',
          cursor: null,
          delivery: { mode: 'webhook', url, secret: SECRET },
        });
        const body = (await res.json()) as { result?: { id?: string }; error?: unknown };
        if (!body.result?.id) throw new Error(`events/subscribe: ${JSON.stringify(body.error)}`);
        ids.push({ token: m.token, url });
      }
      const hookSent = await sendAll(senders, mailboxes, `hook${n}`);
      await drain(hookArrivals, hookSent.size * (n / MAILBOXES));
      rows.push(row('events/subscribe (webhook)', n, hookSent, hookArrivals));
      for (const s of ids)
        await rpc(mailUrl, s.token, 'events/unsubscribe', {
          name: 'message.received',
          delivery: { mode: 'webhook', url: s.url },
        });
    }
    for (const s of senders) s.close();
    console.log(
      `\nbench/mcp-events — ${MESSAGES} inbound msgs at ${RATE}/s per row, ${MAILBOXES} mailboxes, streams on a separate api process, node ${process.version}\n`,
    );
    console.log(table(rows as unknown as Array<Record<string, string | number>>));
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/mcp-events-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.json`,
      JSON.stringify({ rate: RATE, messages: MESSAGES, rows }, null, 2),
    );
  } finally {
    for (const c of children.reverse()) await stopProcess(c);
    receiver.close();
    await dns.close();
    await db.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
