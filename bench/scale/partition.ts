import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { ADMIN_URL } from '../lib/scratch.js';
import { percentile } from '../lib/measure.js';

// bench/scale/partition (docs/scaling.md, "Measured here"): a hash-partitioned copy of `message`
// (PARTITION BY HASH (mailbox_id), PARTS partitions) holding the rows of MAILBOXES mailboxes of the
// 10 M database bench/scale keeps, beside the 10 M-row table itself, in the same run: the list and
// get statements' latency at the SQL level (one connection, ITER executions each, interleaved),
// their plans, ANALYZE time of the whole table and of one partition, and what a partitioned
// table's keys must look like. The copy is dropped at the end. Run after `make bench-scale`.
const DB_NAME = process.env.BENCH_SCALE_DB ?? 'mbx_scale_10000000';
const MAILBOXES = Number(process.env.BENCH_PARTITION_MAILBOXES ?? 100);
const PARTS = Number(process.env.BENCH_PARTITION_PARTS ?? 16);
const ITER = Number(process.env.BENCH_PARTITION_ITER ?? 400);

const list = (table: string) => `select mb.inbound_count, mb.outbound_count, p.* from mailbox mb left join lateral (
    select m.id, m.mailbox_id, m.thread_id, m.direction, m.subject, m.from_address, m.from_display_name,
      m.to_addresses, m.attachment_count, m.is_read, m.read_at, m.created_at, m.received_at, m.sent_at
    from ${table} m where m.mailbox_id = mb.id and m.deleted_at is null
    order by m.created_at desc, m.id desc limit 51) p on true
  where mb.id = $1`;
// The get as the core writes it (findMessage): the message id, and the visibility predicate on the
// joined mailbox: a mailbox token's `mb.id = …` (the planner carries it over the join to
// m.mailbox_id), or a domain token's `mb.domain_id = …`, which names no mailbox.
const getById = (table: string) => `select m.*, mb.address from ${table} m join mailbox mb on mb.id = m.mailbox_id
  where m.id = $1 and mb.id = $2`;
const getByIdDomain = (table: string) => `select m.*, mb.address from ${table} m join mailbox mb on mb.id = m.mailbox_id
  where m.id = $1 and mb.domain_id = $2 and mb.disabled_at is null`;

async function main(): Promise<void> {
  const c = new pg.Client({ connectionString: ADMIN_URL.replace(/\/[^/]*$/, `/${DB_NAME}`) });
  await c.connect();
  const q = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
    (await c.query<R>(text, values)).rows;
  const timed = async (text: string, values: unknown[] = []) => {
    const t = performance.now();
    await c.query(text, values);
    return (performance.now() - t) / 1000;
  };
  try {
    await q(`set maintenance_work_mem = '512MB'`);
    await q('set max_parallel_maintenance_workers = 0');
    const boxes = await q<{ mailbox_id: string; count: number }>(
      `select mailbox_id, count::int as count from bench_scale where role <> 'big' order by role desc, mailbox_id limit $1`,
      [MAILBOXES],
    );
    const small = boxes[0]!; // role 'small' sorts first (desc)
    const ids = boxes.map((b) => b.mailbox_id);
    await q('drop table if exists message_part');
    await q(
      `create table message_part (like message including defaults including generated) partition by hash (mailbox_id)`,
    );
    for (let i = 0; i < PARTS; i++)
      await q(
        `create table message_part_${i} partition of message_part for values with (modulus ${PARTS}, remainder ${i})`,
      );
    let refused = '';
    try {
      await q('alter table message_part add primary key (id)');
    } catch (err) {
      refused = (err as Error).message;
    }
    // Every stored column (the generated search_vector is computed again on insert).
    const cols = (
      await q<{ c: string }>(
        `select string_agg(quote_ident(attname), ', ' order by attnum) as c from pg_attribute
        where attrelid = 'message'::regclass and attnum > 0 and not attisdropped and attgenerated = ''`,
      )
    )[0]!.c;
    const copySeconds = await timed(
      `insert into message_part (${cols}) select ${cols} from message where mailbox_id = any($1::text[])`,
      [ids],
    );
    const t0 = performance.now();
    await q('alter table message_part add primary key (mailbox_id, id)');
    await q(
      `create index message_part_list_idx on message_part (mailbox_id, created_at desc, id desc) where deleted_at is null`,
    );
    await q('create index message_part_search_idx on message_part using gin (search_vector)');
    const indexSeconds = (performance.now() - t0) / 1000;
    const analyzePartSeconds = await timed('analyze message_part');
    const analyzeOnePartitionSeconds = await timed('analyze message_part_0');
    const analyzeWholeSeconds = await timed('analyze message');
    const rows = Number((await q<{ n: string }>('select count(*) as n from message_part'))[0]!.n);
    const domainId = (
      await q<{ d: string }>('select domain_id as d from mailbox where id = $1', [small.mailbox_id])
    )[0]!.d;
    const middle = `msg_${small.mailbox_id.slice(-8)}${String(Math.ceil(small.count / 2)).padStart(9, '0')}`;

    const statements = {
      'list, message (10 M rows)': [list('message'), [small.mailbox_id]],
      [`list, message_part (${PARTS} hash partitions)`]: [list('message_part'), [small.mailbox_id]],
      'get by id, message': [getById('message'), [middle, small.mailbox_id]],
      'get by id, mailbox token, message_part': [getById('message_part'), [middle, small.mailbox_id]],
      'get by id, domain token (no mailbox), message': [getByIdDomain('message'), [middle, domainId]],
      'get by id, domain token (no mailbox), message_part': [getByIdDomain('message_part'), [middle, domainId]],
    } as const;
    const plans: Record<string, string> = {};
    for (const [name, [text, values]] of Object.entries(statements))
      plans[name] = (await q<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${text}`, [...values]))
        .map((r) => r['QUERY PLAN'])
        .join('\n');
    const lat: Record<string, number[]> = {};
    for (let i = 0; i < ITER; i++)
      for (const [name, [text, values]] of Object.entries(statements)) {
        const t = performance.now();
        await c.query({ text, values: [...values] });
        (lat[name] ??= []).push(performance.now() - t);
      }
    const figures = Object.entries(lat).map(([name, xs]) => {
      const s = xs.sort((a, b) => a - b);
      return { name, p50: +percentile(s, 50).toFixed(3), p99: +percentile(s, 99).toFixed(3) };
    });
    const sizes = await q<{ name: string; bytes: string }>(
      `select c.relname as name, pg_total_relation_size(c.oid) as bytes from pg_class c
      where c.relname like 'message_part_%' and c.relkind = 'r' order by c.relname`,
    );
    const result = {
      rows,
      mailboxes: ids.length,
      partitions: PARTS,
      primaryKeyOnIdAlone: refused || 'accepted',
      copySeconds,
      indexSeconds,
      analyzePartSeconds,
      analyzeOnePartitionSeconds,
      analyzeWholeSeconds,
      partitionBytes: sizes.map((s) => Number(s.bytes)),
      figures,
      plans,
    };
    for (const [name, plan] of Object.entries(plans)) console.log(`\n-- EXPLAIN (ANALYZE, BUFFERS) ${name}\n${plan}`);
    console.log(
      `\n${rows} rows of ${ids.length} mailboxes in ${PARTS} hash partitions (copied in ${copySeconds.toFixed(1)} s, indexed in ${indexSeconds.toFixed(1)} s)`,
    );
    console.log(`primary key (id) on the partitioned table: ${result.primaryKeyOnIdAlone}`);
    console.log(
      `ANALYZE: message (10 M) ${analyzeWholeSeconds.toFixed(2)} s; message_part ${analyzePartSeconds.toFixed(2)} s; one partition ${analyzeOnePartitionSeconds.toFixed(2)} s`,
    );
    console.log(`SQL-level latency, one connection, ${ITER} executions each, interleaved:`);
    for (const f of figures) console.log(`  ${f.name}: p50 ${f.p50} ms, p99 ${f.p99} ms`);
    mkdirSync('bench/results', { recursive: true });
    writeFileSync(
      `bench/results/scale-partition-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.json`,
      JSON.stringify(result, null, 2),
    );
  } finally {
    await c.query('drop table if exists message_part').catch(() => undefined);
    await c.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
