import { mkdtempSync, writeFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { measure, table, type Figures } from '../lib/measure.js';
import { shippedNodeFlags } from '../lib/node-flags.js';
import { serve, startProcess, stopProcess } from '../lib/processes.js';
import { writeRatios } from '../lib/ratios.js';
import { ADMIN_URL, scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { backendsOf, cpuMsOf, threadCpuMsOf } from './process-cpu.js';
import { formatProfile, summariseProfile } from './cpu-profile.js';
import { rareWord, SEARCH_COMMON_EVERY, SEARCH_COMMON_WORD, seedMessages, senderOf } from './seed.js';

// bench/http: GET /api/messages (limit 50), GET /api/messages/{id} and GET /api/messages/search on a
// 10 000- and a 1 000 000-message mailbox on PostgreSQL, side by side with the bare stack (node:http
// + pg, the list's own SQL) and a static node:http ceiling. The list rows (ceiling, list, bare
// stack, unchanged list) run interleaved, BENCH_ROUNDS times, and report each row's median, so a
// loaded machine slows ours and the baseline alike. Knobs:
//   SEARCH_BENCH_MESSAGES / BENCH_LARGE  size of the large (and search) mailbox;   BENCH_SMALL the small one
//   BENCH_SECONDS  seconds a row (after 2 s warm-up);  BENCH_CONNECTIONS  autocannon connections (16)
//   BENCH_ROUNDS   rounds of the list rows (3);        BENCH_ROWS=list  only the list rows
//   BENCH_PROFILE=<dir>  instead of rows: node --cpu-prof of the api process under the list load and
//                        the unchanged-list load, summarised in ms per request (docs/performance.md)
// `make bench-smoke` runs the same rows on small mailboxes in seconds.
const SMALL = Number(process.env.BENCH_SMALL ?? 10_000);
const LARGE = Number(process.env.SEARCH_BENCH_MESSAGES ?? process.env.BENCH_LARGE ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LIST_ONLY = process.env.BENCH_ROWS === 'list';
const PROFILE_DIR = process.env.BENCH_PROFILE;
// The api runs as deployed beside PostgreSQL: with Redis, whose bus keeps replicas' change
// sequences fresh, so the unchanged list is answered from memory (docs/api.md, "Change marks").
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PORT = 18080;
const CEILING_PORT = 18081;
const BARE_PORT = 18082;
const NO_BUS_PORT = 18083;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A list row's figures with the CPU ms per request of the serving process and of PostgreSQL. */
type ListFigures = Figures & { nodeCpuMs: number; pgCpuMs: number };

/** One figure per row from its rounds: the median of each column. */
function medianOf(rounds: ListFigures[]): ListFigures {
  const of = (pick: (r: ListFigures) => number) => median(rounds.map(pick));
  return {
    name: rounds[0]!.name,
    rps: of((r) => r.rps),
    p50: of((r) => r.p50),
    p99: of((r) => r.p99),
    nodeCpuMs: of((r) => r.nodeCpuMs),
    pgCpuMs: of((r) => r.pgCpuMs),
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    non2xx: rounds.reduce((n, r) => n + r.non2xx, 0),
  };
}

async function main(): Promise<void> {
  const db = await scratchDatabase('mbx_bench');
  const databaseUrl = db.url;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'mbx-bench-'));
  const secretKey = randomBytes(32).toString('hex');
  const env = {
    DATABASE_URL: databaseUrl,
    MAILBOX_DATA_DIR: dataDir,
    MAILBOX_SECRET_KEY: secretKey,
    PORT: String(PORT),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
    DATABASE_POOL_MAX: '10',
  };
  const children = [];
  try {
    // Migrate and create the tenants through the core, then seed messages with SQL.
    const [small, large] = await seedMailboxes(env, 'bench.test', ['small', 'large']);
    const tenants = { small: small!, large: large! };
    const t0 = Date.now();
    await seedMessages(databaseUrl, tenants.small.mailboxId, 'small@bench.test', SMALL);
    await seedMessages(databaseUrl, tenants.large.mailboxId, 'large@bench.test', LARGE);
    console.log(`seeded ${SMALL} + ${LARGE} messages in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    // Both servers run with the V8 flags the service ships with (package.json's start script, the
    // image), so the two differ only in what runs on them. BENCH_API_NODE_OPTIONS: more node flags
    // for the api process only (e.g. a V8 heap setting to try).
    const shipped = shippedNodeFlags(readFileSync(path.resolve('package.json'), 'utf8')).join(' ');
    const cpuProfile = PROFILE_DIR ? `--cpu-prof --cpu-prof-dir=${path.resolve(PROFILE_DIR)}` : '';
    const nodeOptions = [shipped, process.env.BENCH_API_NODE_OPTIONS ?? '', cpuProfile].join(' ');
    const shippedFlagsEnv: Record<string, string> = { NODE_OPTIONS: `${shipped} ${cpuProfile}`.trim() };
    console.log(`node flags of both servers: ${shipped || '(none)'}`);
    const apiEnv = {
      ...env,
      ...(REDIS_URL !== 'none' ? { REDIS_URL } : {}),
      ...(nodeOptions.trim() ? { NODE_OPTIONS: nodeOptions.trim() } : {}),
    };
    const server = await serve('api', PORT, apiEnv);
    children.push(server);
    const base = `http://127.0.0.1:${PORT}`;
    const auth = (size: 'small' | 'large') => ({ authorization: `Bearer ${tenants[size].token}` });
    const middleId = async (size: 'small' | 'large') => {
      const n = size === 'small' ? SMALL : LARGE;
      return `msg_${tenants[size].mailboxId.slice(-8)}${String(Math.ceil(n / 2)).padStart(9, '0')}`;
    };
    const listUrl = `${base}/api/messages?limit=50`;
    const listAnswer = await fetch(listUrl, { headers: auth('large') });
    const listBody = await listAnswer.text();
    const etag = listAnswer.headers.get('etag');
    const largeId = await middleId('large');
    const getBody = await (await fetch(`${base}/api/messages/${largeId}`, { headers: auth('large') })).text();
    if (!listBody.includes('"items"') || !getBody.includes(largeId) || !etag)
      throw new Error(`the service did not answer as expected: ${listBody.slice(0, 200)} ${getBody.slice(0, 200)}`);
    const unchangedHeaders = { ...auth('large'), 'if-none-match': etag };

    const bodiesFile = path.join(dataDir, 'ceiling.json');
    writeFileSync(bodiesFile, JSON.stringify({ '/api/messages': listBody, '/': getBody }));
    const ceiling = await startProcess(
      ['dist/bench/http/ceiling-server.js', bodiesFile, String(CEILING_PORT)],
      {},
      `http://127.0.0.1:${CEILING_PORT}/api/messages`,
    );
    children.push(ceiling);
    const ceilingBase = `http://127.0.0.1:${CEILING_PORT}`;
    const bare = await startProcess(
      [
        'dist/bench/http/bare-pg-server.js',
        databaseUrl,
        tenants.large.mailboxId,
        'large@bench.test',
        String(BARE_PORT),
      ],
      shippedFlagsEnv,
      `http://127.0.0.1:${BARE_PORT}/`,
    );
    children.push(bare);
    const bareBody = await (await fetch(`http://127.0.0.1:${BARE_PORT}/`)).text();
    console.log(`list body: ${Buffer.byteLength(listBody)} bytes; bare stack's: ${Buffer.byteLength(bareBody)} bytes`);
    if (PROFILE_DIR) {
      await profileLoads([
        { name: 'list', child: server, url: listUrl, headers: auth('large') },
        { name: 'unchanged list (304)', child: server, url: listUrl, headers: unchangedHeaders },
        { name: 'bare stack list', child: bare, url: `http://127.0.0.1:${BARE_PORT}/`, headers: {} },
      ]);
      return;
    }
    // The same api without a bus between replicas (PostgreSQL, no Redis): every poll reads the sequence.
    const noBus = await serve('api', NO_BUS_PORT, { ...env, PORT: String(NO_BUS_PORT), ...shippedFlagsEnv });
    children.push(noBus);

    const opts = { seconds: SECONDS, connections: CONNECTIONS };
    const databaseName = new URL(databaseUrl).pathname.slice(1);
    interface ListRow {
      name: string;
      url: string;
      child: ChildProcess;
      headers?: Record<string, string>;
      expect304?: boolean;
    }
    const listRows: ListRow[] = [
      { name: 'list ceiling (bare node:http)', url: `${ceilingBase}/api/messages`, child: ceiling },
      { name: `list limit=50, ${LARGE} msgs`, url: listUrl, child: server, headers: auth('large') },
      {
        name: `list bare stack (node:http + pg, same SQL), ${LARGE} msgs`,
        url: `http://127.0.0.1:${BARE_PORT}/`,
        child: bare,
      },
      // Polls of an unchanged mailbox: If-None-Match with the list's ETag → 304, the
      // mailbox's change sequence from memory, no message rows (docs/api.md, "Change marks and ETags").
      {
        name: `list unchanged (If-None-Match → 304), ${LARGE} msgs`,
        url: listUrl,
        child: server,
        headers: unchangedHeaders,
        expect304: true,
      },
      {
        name: `list unchanged, no bus (PostgreSQL without Redis: sequence read), ${LARGE} msgs`,
        url: `http://127.0.0.1:${NO_BUS_PORT}/api/messages?limit=50`,
        child: noBus,
        headers: unchangedHeaders,
        expect304: true,
      },
    ];
    // Each row's CPU per request, of the serving process and of the database's backends.
    const measureRow = async (row: ListRow): Promise<ListFigures> => {
      let started: { node: number; pg: Map<number, number> } | undefined;
      const figures = await measure(row.name, row.url, {
        ...opts,
        ...(row.headers ? { headers: row.headers } : {}),
        ...(row.expect304 ? { expect304: true } : {}),
        afterWarmUp: async () => {
          const pids = await backendsOf(ADMIN_URL, databaseName);
          started = { node: cpuMsOf(row.child.pid!), pg: new Map(pids.map((pid) => [pid, cpuMsOf(pid)])) };
        },
      });
      // A backend that ended meanwhile (idle timeout) is left out rather than counted negative.
      let pgMs = 0;
      for (const [pid, before] of started!.pg) {
        const after = cpuMsOf(pid);
        if (!Number.isNaN(after) && !Number.isNaN(before)) pgMs += after - before;
      }
      const requests = Math.max(figures.requests ?? 1, 1);
      return { ...figures, nodeCpuMs: (cpuMsOf(row.child.pid!) - started!.node) / requests, pgCpuMs: pgMs / requests };
    };
    const rounds = new Map<string, ListFigures[]>(listRows.map((row) => [row.name, []]));
    for (let round = 0; round < ROUNDS; round++)
      for (const row of listRows) rounds.get(row.name)!.push(await measureRow(row));
    const [listCeil, listLarge, bareStack, unchanged, unchangedNoBus] = [...rounds.values()].map(medianOf) as [
      ListFigures,
      ListFigures,
      ListFigures,
      ListFigures,
      ListFigures,
    ];
    const results: Figures[] = [listCeil, listLarge, bareStack, unchanged, unchangedNoBus];
    let getCeil: Figures | undefined;
    if (!LIST_ONLY) {
      results.push(
        await measure(`list limit=50, ${SMALL} msgs`, `${base}/api/messages?limit=50`, {
          ...opts,
          headers: auth('small'),
        }),
      );
      getCeil = await measure('get ceiling (bare node:http)', `${ceilingBase}/api/messages/x`, opts);
      results.push(getCeil);
      results.push(
        await measure(`get by id, ${SMALL} msgs`, `${base}/api/messages/${await middleId('small')}`, {
          ...opts,
          headers: auth('small'),
        }),
      );
      results.push(
        await measure(`get by id, ${LARGE} msgs`, `${base}/api/messages/${largeId}`, {
          ...opts,
          headers: auth('large'),
        }),
      );
      // Search beside the plain list, on the same mailboxes in the same run: a rare word
      // (one message: the GIN index finds it), a common word in 1 of 100 messages (the GIN index
      // yields ~1 % of the mailbox, sorted for the newest 50), the from: operator (a sender of ~1 %:
      // a substring filter on the newest rows), and a word in nearly every message (the worst case).
      const searches = [
        [`search rare word, ${SMALL} msgs`, rareWord(Math.ceil(SMALL / 3)), 'small'],
        [`search rare word, ${LARGE} msgs`, rareWord(Math.ceil(LARGE / 3)), 'large'],
        [`search common word (1 %), ${LARGE} msgs`, SEARCH_COMMON_WORD, 'large'],
        [`search from: (1 %), ${LARGE} msgs`, `from:${senderOf(42)}`, 'large'],
        [`search word in ~every message, ${LARGE} msgs`, 'hi', 'large'],
      ] as const;
      for (const [name, q, size] of searches) {
        const url = `${base}/api/messages/search?limit=50&q=${encodeURIComponent(q)}`;
        const probe = await fetch(url, { headers: auth(size) });
        const found = ((await probe.json()) as { data?: { items?: unknown[] } }).data?.items?.length ?? -1;
        if (probe.status !== 200 || found < 1) throw new Error(`${name}: ${probe.status}, ${found} items for q=${q}`);
        results.push(await measure(name, url, { ...opts, headers: auth(size) }));
      }
    }

    const cpu = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '' : v.toFixed(3));
    const rows = results.map((r) => {
      const ceil = r.name.startsWith('get') && getCeil ? getCeil : listCeil;
      return {
        scenario: r.name,
        'req/s': r.rps,
        'p50 ms': r.p50,
        'p99 ms': r.p99,
        'vs ceiling': `${((r.rps / ceil.rps) * 100).toFixed(0)}%`,
        'server CPU ms/req': cpu((r as Partial<ListFigures>).nodeCpuMs),
        'PostgreSQL CPU ms/req': cpu((r as Partial<ListFigures>).pgCpuMs),
        errors: r.errors + r.non2xx,
      };
    });
    console.log(
      `\nbench/http — PostgreSQL + Redis, ${CONNECTIONS} connections, ${SECONDS} s per row, list rows: median of ` +
        `${ROUNDS} interleaved rounds, node ${process.version}\n`,
    );
    console.log(table(rows));
    const readShare = listLarge.rps / Math.max(bareStack.rps, 1);
    const pollGain = unchanged.rps / Math.max(bareStack.rps, 1);
    const share = listLarge.rps / listCeil.rps;
    console.log(
      `\ntarget: list >= 0.9x the bare stack (node:http + pg, same SQL): ${readShare.toFixed(2)}x ${readShare >= 0.9 ? 'MET' : 'NOT MET'}`,
    );
    console.log(
      `target: unchanged list (304) >= 5x the bare stack: ${pollGain.toFixed(2)}x ${pollGain >= 5 ? 'MET' : 'NOT MET'}`,
    );
    console.log(`(static ceiling: list is ${(share * 100).toFixed(0)}% of it)`);
    const summary: Record<string, number> = { readShare, pollGain, share };
    if (!LIST_ONLY) {
      const named = (prefix: string) => results.find((r) => r.name.startsWith(prefix))!;
      const listSmall = named(`list limit=50, ${SMALL} msgs`);
      const [getSmall, getLarge] = [named(`get by id, ${SMALL}`), named(`get by id, ${LARGE}`)];
      const listRatio = listLarge.p50 / Math.max(listSmall.p50, 0.01);
      const getRatio = getLarge.p50 / Math.max(getSmall.p50, 0.01);
      Object.assign(summary, { listRatio, getRatio });
      console.log(
        `target: list p50 at ${LARGE} within 1.3x of p50 at ${SMALL}: ${listRatio.toFixed(2)}x ${listRatio <= 1.3 ? 'MET' : 'NOT MET'}`,
      );
      console.log(`        get  p50 ratio: ${getRatio.toFixed(2)}x ${getRatio <= 1.3 ? 'MET' : 'NOT MET'}`);
      for (const r of results.filter((x) => x.name.startsWith('search') && x.name.endsWith(`${LARGE} msgs`)))
        console.log(
          `search beside list at ${LARGE}: ${r.name.replace(/, \d+ msgs$/, '')}: p50 ${r.p50} ms / p99 ${r.p99} ms ` +
            `(list p50 ${listLarge.p50} ms / p99 ${listLarge.p99} ms: ${(r.p50 / Math.max(listLarge.p50, 0.01)).toFixed(2)}x at p50)`,
        );
      console.log(`(the common word is in 1 of ${SEARCH_COMMON_EVERY} messages; from: names 1 of 97 senders)`);
    }
    const work = `GET /api/messages?limit=50, ${LARGE} msgs, ${CONNECTIONS} connections`;
    writeRatios('http', [
      {
        work: `list: ${work}`,
        ours: listLarge.rps,
        baseline: bareStack.rps,
        baselineName: 'bare stack (node:http + pg, same SQL)',
        unit: 'req/s',
        goal: 0.9,
        higherIsBetter: true,
      },
      {
        work: `unchanged list (If-None-Match → 304): ${work}`,
        ours: unchanged.rps,
        baseline: bareStack.rps,
        baselineName: 'bare stack list (node:http + pg, same SQL)',
        unit: 'req/s',
        goal: 5,
        higherIsBetter: true,
      },
      {
        work: `list: ${work}`,
        ours: listLarge.rps,
        baseline: listCeil.rps,
        baselineName: 'static ceiling (node:http, body from memory), info',
        unit: 'req/s',
        goal: null,
        higherIsBetter: true,
      },
    ]);
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/http-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.json`,
      JSON.stringify({ results, rounds: Object.fromEntries(rounds), ...summary }, null, 2),
    );
  } finally {
    for (const c of children) await stopProcess(c);
    await db.drop();
  }
}

/**
 * node --cpu-prof of the api (and the bare stack) under each load in turn; the processes are
 * stopped so V8 writes their profiles, and each load's window of samples is summarised.
 */
async function profileLoads(
  loads: Array<{ name: string; child: ChildProcess; url: string; headers: Record<string, string> }>,
): Promise<void> {
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  const windows: Array<{ from: number; to: number; requests: number; rps: number; threads: Map<string, number> }> = [];
  for (const { url, headers, child } of loads) {
    await autocannon({ url, headers, connections: CONNECTIONS, duration: 2 });
    const from = nowUs();
    const before = threadCpuMsOf(child.pid!);
    const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS });
    const threads = new Map([...threadCpuMsOf(child.pid!)].map(([name, ms]) => [name, ms - (before.get(name) ?? 0)]));
    windows.push({ from, to: nowUs(), requests: r.requests.total, rps: Math.round(r.requests.average), threads });
  }
  for (const child of new Set(loads.map((l) => l.child))) await stopProcess(child);
  const dir = path.resolve(PROFILE_DIR!);
  loads.forEach(({ name, child }, i) => {
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile') && f.includes(`.${child.pid}.`));
    if (!file) throw new Error(`no .cpuprofile of process ${child.pid} in ${dir}`);
    const w = windows[i]!;
    console.log(`\n## CPU profile: ${name}, ${w.rps} req/s (${path.join(dir, file)})\n`);
    // The samples are wall time: a thread waiting for a core (2 cores shared with PostgreSQL and
    // autocannon) is charged to the function it was in. /proc's CPU time of each thread is not.
    const perRequest = (ms: number) => (ms / Math.max(w.requests, 1)).toFixed(3);
    const threads = [...w.threads].filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1]);
    console.log(`CPU ms/req by thread (/proc): ${threads.map(([name, ms]) => `${name} ${perRequest(ms)}`).join(', ')}`);
    console.log(formatProfile(summariseProfile(path.join(dir, file), w.from, w.to, w.requests)));
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
