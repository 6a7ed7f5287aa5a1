import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { searchPageQuery } from '../../src/core/state/search/message-search.store.js';
import { parseSearchQuery } from '../../src/core/state/search/search-query.js';
import { ADMIN_URL } from '../lib/scratch.js';
import { rareWord, SEARCH_COMMON_WORD } from '../http/seed.js';
import { offlineCompiler } from '../lib/sql-compiler.js';

// bench/scale/search-index (docs/scaling.md, section 3, item 1): the core's search statement on the
// 10 M database bench/scale keeps, before and after a GIN index that leads with the mailbox
// (btree_gin: gin (mailbox_id, search_vector)), which is then dropped again. Run after
// `make bench-scale`; takes the index build (minutes at 10 M) and ~1 GB of disk while it exists.
// Since migration 20270126000000 message_search_idx itself leads with the mailbox, so on a database
// migrated since, both sides of this comparison use such an index (docs/scaling.md, section 3).
const DB_NAME = process.env.BENCH_SCALE_DB ?? 'mbx_scale_10000000';
const INDEX = 'message_search_mailbox_idx';

const compiler = offlineCompiler;

async function main(): Promise<void> {
  const c = new pg.Client({ connectionString: ADMIN_URL.replace(/\/[^/]*$/, `/${DB_NAME}`) });
  await c.connect();
  try {
    await c.query(`set maintenance_work_mem = '512MB'`);
    await c.query('set max_parallel_maintenance_workers = 0');
    const layout = (
      await c.query<{ role: string; mailbox_id: string; count: number }>(
        `select role, mailbox_id, count::int as count from bench_scale where role in ('big', 'small')`,
      )
    ).rows;
    const cases = layout.flatMap((l) => [
      [`rare word, ${l.count}-msg mailbox`, l.mailbox_id, rareWord(Math.ceil(l.count / 3))] as const,
      [`common word (1 %), ${l.count}-msg mailbox`, l.mailbox_id, SEARCH_COMMON_WORD] as const,
    ]);
    const explain = async () => {
      const out: Record<string, { ms: number; plan: string }> = {};
      for (const [name, mailboxId, q] of cases) {
        const s = searchPageQuery({ kind: 'mailbox', mailboxId }, mailboxId, parseSearchQuery(q), null, 51).compile(
          compiler,
        );
        const plan = (
          await c.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${s.sql}`, [...s.parameters])
        ).rows.map((r) => r['QUERY PLAN']);
        const ms = Number(/Execution Time: ([\d.]+)/.exec(plan.at(-1) ?? '')?.[1] ?? NaN);
        out[name] = { ms, plan: plan.join('\n') };
      }
      return out;
    };
    const before = await explain();
    await c.query('create extension if not exists btree_gin');
    const t0 = performance.now();
    await c.query(`create index if not exists ${INDEX} on message using gin (mailbox_id, search_vector)`);
    const buildSeconds = (performance.now() - t0) / 1000;
    const bytes = Number((await c.query<{ b: string }>(`select pg_relation_size('${INDEX}') as b`)).rows[0]!.b);
    await c.query('analyze message');
    const after = await explain();
    for (const [name, r] of Object.entries(after)) console.log(`\n-- with ${INDEX}: ${name}\n${r.plan}`);
    console.log(`\n${INDEX}: built in ${buildSeconds.toFixed(0)} s, ${(bytes / 1e6).toFixed(0)} MB`);
    for (const name of Object.keys(before))
      console.log(
        `  search ${name}: ${before[name]!.ms} ms with message_search_idx alone, ${after[name]!.ms} ms with ${INDEX}`,
      );
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/scale-search-index-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.json`,
      JSON.stringify({ buildSeconds, bytes, before, after }, null, 2),
    );
  } finally {
    await c.query(`drop index if exists ${INDEX}`).catch(() => undefined);
    await c.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
