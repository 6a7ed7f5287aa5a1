import { createRequire } from 'node:module';
import type pgTypes from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, hotRow, settleAll, sql, type Sql } from '../../src/storage/database.js';
import { openOrm, type Orm } from '../../src/storage/orm.js';
import { createScratchDatabase, ENGINE } from '../support/harness.js';
import { migratedPgliteDump } from '../support/pglite-dump.js';

// Database.writeTx: on PostgreSQL with pipelining (src/storage/statement-pipeline.ts) the
// statements a write issues together share one round trip; without it (PGlite, or turned off) it
// is a plain transaction. The outcomes must be the same either way; the round trips are counted
// on the pg client (MikroORM's own copy of node-postgres, the one the pool uses).
const pg = createRequire(import.meta.resolve('@mikro-orm/postgresql'))('pg') as typeof pgTypes;

let scratch: { url: string; drop(): Promise<void> } | undefined;
const opened: Orm[] = [];
const sent: unknown[] = [];
const query = pg.Client.prototype.query;

beforeAll(async () => {
  if (ENGINE === 'postgres') scratch = await createScratchDatabase();
  pg.Client.prototype.query = function (this: pgTypes.Client, ...args: unknown[]) {
    sent.push(args[0]);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
});
afterAll(async () => {
  pg.Client.prototype.query = query;
  for (const orm of opened) await orm.close(true);
  await scratch?.drop();
});

/** Both modes on PostgreSQL; the plain transaction on PGlite. */
const modes = ENGINE === 'postgres' ? [true, false] : [false];

async function open(pipeline: boolean): Promise<Database> {
  // On PGlite from the harness's dump: a started cluster without initdb's second.
  const orm = await openOrm(
    scratch ? { databaseUrl: scratch.url, poolMax: 1 } : { pgliteDump: await migratedPgliteDump() },
  );
  opened.push(orm);
  const db = new Database(orm, { pipeline });
  await sql`create table if not exists pipe_probe (id int primary key, note text, at timestamptz, doc jsonb, n int8)`.execute(
    db.db,
  );
  await sql`truncate pipe_probe`.execute(db.db);
  return db;
}

const insert = (trx: Sql, id: number, note = 'x') =>
  sql`insert into pipe_probe (id, note, at, doc, n) values (${id}, ${note}, ${new Date(0)}, ${JSON.stringify({ id })}::jsonb, ${id})`.execute(
    trx,
  );
const ids = async (db: Database) =>
  (await db.rows(sql<{ id: number }>`select id from pipe_probe order by id`)).map((r) => r.id);

describe.each(modes)('Database.writeTx (pipelined: %s)', (pipeline) => {
  it('commits what a write issued together, with results as pg gives them', async () => {
    const db = await open(pipeline);
    sent.length = 0;
    const result = await db.writeTx(async (trx) => {
      const writes = [insert(trx, 1), insert(trx, 2), insert(trx, 3)];
      const read = sql<{
        id: number;
        at: string;
        doc: unknown;
        n: unknown;
      }>`select id, at, doc, n from pipe_probe where id = ${2}`.execute(trx);
      const update = sql`update pipe_probe set note = 'y' where id <= ${2}`.execute(trx);
      await settleAll([...writes, read, update]);
      return { read: (await read).rows, changed: (await update).numAffectedRows };
    });
    const trips = sent.length;
    expect(await ids(db)).toEqual([1, 2, 3]);
    expect(result.changed).toBe(2n);
    expect(result.read).toHaveLength(1);
    expect(result.read[0]!.id).toBe(2);
    expect(new Date(result.read[0]!.at).getTime()).toBe(0);
    if (ENGINE === 'postgres') {
      expect(result.read[0]!.doc).toEqual({ id: 2 }); // jsonb parsed, int8 as text: pg's own type parsers
      expect(result.read[0]!.n).toBe('2');
      // Pipelined: BEGIN and the five statements in one round trip, COMMIT in a second.
      expect(trips).toBe(pipeline ? 2 : 7);
    }
  });

  it('a failing statement: it and every later one reject with its error, and nothing is committed', async () => {
    const db = await open(pipeline);
    const outcomes: PromiseSettledResult<unknown>[] = [];
    const err = await db
      .writeTx(async (trx) => {
        const writes = [insert(trx, 1), insert(trx, 1), insert(trx, 2)];
        outcomes.push(...(await Promise.allSettled(writes)));
        await settleAll(writes);
      })
      .catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('23505'); // unique_violation, the duplicate's own error
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    if (pipeline)
      expect((outcomes[2] as PromiseRejectedResult).reason).toBe((outcomes[1] as PromiseRejectedResult).reason);
    expect(await ids(db)).toEqual([]);
    // The connection (a pool of one) serves the next transaction.
    await db.writeTx(async (trx) => void (await insert(trx, 7)));
    expect(await ids(db)).toEqual([7]);
  });

  // Pipelined only: in the plain transaction PostgreSQL answers that COMMIT with ROLLBACK and
  // MikroORM does not look at the answer, so a write must never swallow a statement's failure.
  it.runIf(pipeline)('a failure the write swallowed still fails the commit: never reported as durable', async () => {
    const db = await open(pipeline);
    const err = await db
      .writeTx(async (trx) => {
        await insert(trx, 1);
        await insert(trx, 1).catch(() => undefined);
        return 'done';
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(await ids(db)).toEqual([]);
  });

  it('a write that throws after its statements succeeded is rolled back', async () => {
    const db = await open(pipeline);
    const err = await db
      .writeTx(async (trx) => {
        await settleAll([insert(trx, 1), insert(trx, 2)]);
        throw new Error('refused after the fact');
      })
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe('refused after the fact');
    expect(await ids(db)).toEqual([]);
  });

  it('the same statement text, new to the connection, twice in one batch and again later', async () => {
    const db = await open(pipeline);
    for (let round = 0; round < 3; round++)
      await db.writeTx((trx) => settleAll([insert(trx, round * 10 + 1), insert(trx, round * 10 + 2)]));
    expect(await ids(db)).toEqual([1, 2, 11, 12, 21, 22]);
    if (ENGINE === 'postgres' && pipeline) {
      const names = await db.rows(sql<{ statement: string }>`select statement from pg_prepared_statements`);
      expect(names.filter((n) => n.statement.startsWith('insert into pipe_probe'))).toHaveLength(1);
    }
  });
});

// commitWithStatements (queued intake's one-statement writes): COMMIT travels in the batch of the
// write's statements. Outcomes equal a plain transaction's; pipelined it is one round trip.
describe.each(modes)('Database.writeTx with commitWithStatements (pipelined: %s)', (pipeline) => {
  const once = { commitWithStatements: true };

  it('commits the statements issued at once, BEGIN to COMMIT in one round trip', async () => {
    const db = await open(pipeline);
    sent.length = 0;
    const result = await db.writeTx((trx) => settleAll([insert(trx, 1), insert(trx, 2)]).then(() => 'ok'), once);
    const trips = sent.length;
    expect(result).toBe('ok');
    expect(await ids(db)).toEqual([1, 2]);
    if (ENGINE === 'postgres') expect(trips).toBe(pipeline ? 1 : 4);
  });

  it('a failing statement: nothing commits, the statement’s own error, the connection serves again', async () => {
    const db = await open(pipeline);
    const err = await db
      .writeTx((trx) => settleAll([insert(trx, 1), insert(trx, 1), insert(trx, 2)]), once)
      .catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('23505');
    expect(await ids(db)).toEqual([]);
    await db.writeTx((trx) => insert(trx, 9), once);
    expect(await ids(db)).toEqual([9]);
  });

  // The contract the option states: a write that issues a statement after the first batch cannot
  // have it in a transaction whose COMMIT already left; it is refused, never run outside one.
  it.runIf(pipeline)('a statement issued after the batch is refused, not run after the COMMIT', async () => {
    const db = await open(pipeline);
    const err = await db
      .writeTx(async (trx) => {
        await insert(trx, 1);
        await insert(trx, 2);
      }, once)
      .catch((e: unknown) => e);
    // Reported as a failure that nonetheless committed, naming the refused statement as its cause.
    expect((err as Error).message).toMatch(/committed although/);
    expect(String(((err as Error).cause as Error).message)).toMatch(/after its transaction's COMMIT/);
    expect(await ids(db)).toEqual([1]); // the first batch (with its COMMIT) is durable; the late one never ran
  });
});

// hotRow (a mailbox's counters, its event sequence, a thread): pipelined, a marked statement goes
// after the others issued in the same turn, so the row it locks is held for the end of the batch
// and the COMMIT only. Plain transactions run statements in call order.
describe.each(modes)('Database.writeTx with hot-row statements (pipelined: %s)', (pipeline) => {
  const order = async (db: Database) =>
    (await db.rows(sql<{ note: string }>`select note from pipe_probe order by n`)).map((r) => r.note);
  // Each insert takes the next value of a sequence as it runs: `n` is the order PostgreSQL ran them in.
  const logged = (id: number, note: string) =>
    sql`insert into pipe_probe (id, note, n) values (${id}, ${note}, nextval('pipe_order'))`;

  it('goes after the statements issued with it, in its own order; a later turn keeps call order', async () => {
    const db = await open(pipeline);
    await sql`create sequence if not exists pipe_order`.execute(db.db);
    await db.writeTx(async (trx) => {
      await settleAll([
        hotRow(logged(1, 'hot 1')).execute(trx),
        logged(2, 'a').execute(trx),
        hotRow(logged(3, 'hot 2')).execute(trx),
        logged(4, 'b').execute(trx),
      ]);
      await logged(5, 'next turn').execute(trx);
    });
    expect(await order(db)).toEqual(
      pipeline ? ['a', 'b', 'hot 1', 'hot 2', 'next turn'] : ['hot 1', 'a', 'hot 2', 'b', 'next turn'],
    );
  });

  it('a failing hot-row statement still fails the transaction: nothing commits', async () => {
    const db = await open(pipeline);
    const err = await db
      .writeTx((trx) => settleAll([hotRow(sql`select 1 / 0`).execute(trx), insert(trx, 1)]))
      .catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('22012');
    expect(await ids(db)).toEqual([]);
  });

  // The point of the order: while the batch's other statements run, another transaction can still
  // take the row (FOR UPDATE NOWAIT fails at once on a locked row; no timing is asserted).
  it.runIf(pipeline)('leaves the row unlocked while the rest of its batch runs', async () => {
    const db = await open(pipeline);
    await insert(db.db, 1);
    const other = new pg.Client({ connectionString: scratch!.url });
    await other.connect();
    try {
      const tx = db.writeTx((trx) =>
        settleAll([
          hotRow(sql`update pipe_probe set n = n + 1 where id = 1`).execute(trx),
          sql`select pg_sleep(2)`.execute(trx),
        ]),
      );
      // Once the sleep runs (the hot-row update issued before it has not, if it goes last)...
      let sleeping = false;
      for (let i = 0; i < 400 && !sleeping; i++) {
        const active = await other.query(
          `select 1 from pg_stat_activity where state = 'active' and query like 'select pg_sleep%'`,
        );
        sleeping = (active.rowCount ?? 0) > 0;
        if (!sleeping) await new Promise((r) => setTimeout(r, 10));
      }
      expect(sleeping).toBe(true); // seen mid-batch: a transaction already over would prove nothing
      // ...the row is free: locked, NOWAIT would fail with 55P03.
      await other.query('begin');
      const taken = await other.query('select n from pipe_probe where id = 1 for update nowait');
      expect(taken.rows).toEqual([{ n: '1' }]);
      await other.query('update pipe_probe set n = n + 10 where id = 1');
      await other.query('commit');
      await tx;
      const [row] = await db.rows(sql<{ n: string }>`select n::text from pipe_probe where id = 1`);
      expect(row!.n).toBe('12'); // both updates, the hot-row one after the other transaction's
    } finally {
      await other.end();
    }
  });
});
