import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { measure, table, type Figures } from '../lib/measure.js';
import { serve, startProcess, stopProcess } from '../lib/processes.js';
import { scratchDatabase, seedMailboxes } from '../lib/scratch.js';
import { rareWord, SEARCH_COMMON_EVERY, SEARCH_COMMON_WORD, seedMessages, senderOf } from './seed.js';

// bench/http: GET /api/messages (limit 50), GET /api/messages/{id} and GET /api/messages/search on a
// 10 000- and a 1 000 000-message mailbox on PostgreSQL, side by side with a bare node:http ceiling.
// The large mailbox is the search mailbox: SEARCH_BENCH_MESSAGES (or BENCH_LARGE) sets its size;
// `make bench-smoke` runs the same rows on small mailboxes in seconds.
const SMALL = Number(process.env.BENCH_SMALL ?? 10_000);
const LARGE = Number(process.env.SEARCH_BENCH_MESSAGES ?? process.env.BENCH_LARGE ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const PORT = 18080;
const CEILING_PORT = 18081;
const BARE_PORT = 18082;

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

    const server = await serve('api', PORT, env);
    children.push(server);
    const base = `http://127.0.0.1:${PORT}`;
    const auth = (size: 'small' | 'large') => ({ authorization: `Bearer ${tenants[size].token}` });
    const middleId = async (size: 'small' | 'large') => {
      const n = size === 'small' ? SMALL : LARGE;
      return `msg_${tenants[size].mailboxId.slice(-8)}${String(Math.ceil(n / 2)).padStart(9, '0')}`;
    };
    const listBody = await (await fetch(`${base}/api/messages?limit=50`, { headers: auth('large') })).text();
    const largeId = await middleId('large');
    const getBody = await (await fetch(`${base}/api/messages/${largeId}`, { headers: auth('large') })).text();
    if (!listBody.includes('"items"') || !getBody.includes(largeId))
      throw new Error(`the service did not answer as expected: ${listBody.slice(0, 200)} ${getBody.slice(0, 200)}`);
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
      ['dist/bench/http/bare-pg-server.js', databaseUrl, tenants.large.mailboxId, String(BARE_PORT)],
      {},
      `http://127.0.0.1:${BARE_PORT}/`,
    );
    children.push(bare);

    const opts = { seconds: SECONDS, connections: CONNECTIONS };
    const results: Figures[] = [];
    results.push(await measure('list ceiling (bare node:http)', `${ceilingBase}/api/messages`, opts));
    results.push(
      await measure(`list limit=50, ${SMALL} msgs`, `${base}/api/messages?limit=50`, {
        ...opts,
        headers: auth('small'),
      }),
    );
    results.push(
      await measure(`list limit=50, ${LARGE} msgs`, `${base}/api/messages?limit=50`, {
        ...opts,
        headers: auth('large'),
      }),
    );
    // Polls of an unchanged mailbox (issue 15): If-None-Match with the list's ETag → 304, one
    // mailbox-row read and no message rows (docs/api.md, "Change marks and ETags").
    const etag = (await fetch(`${base}/api/messages?limit=50`, { headers: auth('large') })).headers.get('etag');
    if (!etag) throw new Error('the list answered without an ETag');
    const bareStack = await measure(
      `list bare stack (node:http + pg, same SQL), ${LARGE} msgs`,
      `http://127.0.0.1:${BARE_PORT}/`,
      opts,
    );
    const unchanged = await measure(
      `list unchanged (If-None-Match → 304), ${LARGE} msgs`,
      `${base}/api/messages?limit=50`,
      {
        ...opts,
        headers: { ...auth('large'), 'if-none-match': etag },
        expect304: true,
      },
    );
    results.push(await measure('get ceiling (bare node:http)', `${ceilingBase}/api/messages/x`, opts));
    results.push(
      await measure(`get by id, ${SMALL} msgs`, `${base}/api/messages/${await middleId('small')}`, {
        ...opts,
        headers: auth('small'),
      }),
    );
    results.push(
      await measure(`get by id, ${LARGE} msgs`, `${base}/api/messages/${largeId}`, { ...opts, headers: auth('large') }),
    );

    // Search (issue 13) beside the plain list, on the same mailboxes in the same run: a rare word
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

    const [listCeil, listSmall, listLarge, getCeil, getSmall, getLarge] = results as [
      Figures,
      Figures,
      Figures,
      Figures,
      Figures,
      Figures,
    ];
    results.splice(3, 0, bareStack, unchanged);
    const rows = results.map((r) => {
      const ceil = r.name.startsWith('get') ? getCeil : listCeil;
      return {
        scenario: r.name,
        'req/s': r.rps,
        'p50 ms': r.p50,
        'p99 ms': r.p99,
        'vs ceiling': `${((r.rps / ceil.rps) * 100).toFixed(0)}%`,
        errors: r.errors + r.non2xx,
      };
    });
    console.log(
      `\nbench/http — PostgreSQL, ${CONNECTIONS} connections, ${SECONDS} s per row, node ${process.version}\n`,
    );
    console.log(table(rows));
    const listRatio = listLarge.p50 / Math.max(listSmall.p50, 0.01);
    const getRatio = getLarge.p50 / Math.max(getSmall.p50, 0.01);
    console.log(
      `\ntarget: list p50 at ${LARGE} within 1.3x of p50 at ${SMALL}: ${listRatio.toFixed(2)}x ${listRatio <= 1.3 ? 'MET' : 'NOT MET'}`,
    );
    console.log(`        get  p50 ratio: ${getRatio.toFixed(2)}x ${getRatio <= 1.3 ? 'MET' : 'NOT MET'}`);
    const share = listLarge.rps / listCeil.rps;
    console.log(
      `target: list throughput >= 40% of the ceiling: ${(share * 100).toFixed(0)}% ${share >= 0.4 ? 'MET' : 'NOT MET'}`,
    );
    for (const r of results.filter((x) => x.name.startsWith('search') && x.name.endsWith(`${LARGE} msgs`)))
      console.log(
        `search beside list at ${LARGE}: ${r.name.replace(/, \d+ msgs$/, '')}: p50 ${r.p50} ms / p99 ${r.p99} ms ` +
          `(list p50 ${listLarge.p50} ms / p99 ${listLarge.p99} ms: ${(r.p50 / Math.max(listLarge.p50, 0.01)).toFixed(2)}x at p50)`,
      );
    console.log(`(the common word is in 1 of ${SEARCH_COMMON_EVERY} messages; from: names 1 of 97 senders)`);
    const pollGain = unchanged.rps / Math.max(bareStack.rps, 1);
    const readShare = listLarge.rps / Math.max(bareStack.rps, 1);
    console.log(
      `target: list >= 0.9x the bare stack (node:http + pg, same SQL): ${readShare.toFixed(2)}x ${readShare >= 0.9 ? 'MET' : 'NOT MET'}`,
    );
    console.log(
      `target: unchanged list (304) >= 5x the bare stack: ${pollGain.toFixed(2)}x ${pollGain >= 5 ? 'MET' : 'NOT MET'}`,
    );
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/http-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.json`,
      JSON.stringify({ results, listRatio, getRatio, share, readShare, pollGain }, null, 2),
    );
  } finally {
    for (const c of children) await stopProcess(c);
    await db.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
