import { createQueryId, sql, type CompiledQuery, type Kysely, type RawBuilder } from 'kysely';
import type pgTypes from 'pg';
import type { Em, Orm } from './orm.js';
import { HOT_ROW_MARK, pipelinedTransaction } from './statement-pipeline.js';
import type { DB } from './schema.js';

/**
 * A Kysely handle bound either to the pool or to one open transaction, typed with the schema the
 * migrations create (src/storage/schema.ts, `make db-types`).
 */
export type Sql = Kysely<DB>;
/**
 * `commitWithStatements`: the COMMIT goes out with the statements `fn` issues at once (one round
 * trip when pipelined); for an `fn` whose every statement fails on its own when it must not commit.
 */
export interface WriteTxOptions {
  commitWithStatements?: boolean;
}
/** A piece of SQL (the `sql` tag's value) that a query embeds. */
export type SqlFragment = RawBuilder<unknown>;
export { createQueryId, sql, type CompiledQuery };

/**
 * The storage entry point for the core. SQL is written with Kysely's `sql` tag (real bind
 * parameters on both pg and PGlite); `tx` runs a MikroORM transaction so everything written
 * inside commits or rolls back together.
 */
export class Database {
  private readonly pooled: Sql;
  private pool: Promise<pgTypes.Pool> | null = null;

  /** `pipeline`: `writeTx` pipelines its statements (PostgreSQL only; statement-pipeline.ts). */
  constructor(
    readonly orm: Orm,
    private readonly options: { pipeline?: boolean } = {},
  ) {
    this.pooled = (orm.em.fork() as Em).getKysely() as unknown as Sql;
  }

  get db(): Sql {
    return this.pooled;
  }

  /** A query's rows; a CompiledQuery (compiled once, e.g. pageStatement) runs without compiling again. */
  async rows<T>(query: RawBuilder<T> | CompiledQuery<T>, on: Sql = this.pooled): Promise<T[]> {
    return 'sql' in query ? (await on.executeQuery(query)).rows : (await query.execute(on)).rows;
  }

  async one<T>(query: RawBuilder<T>, on: Sql = this.pooled): Promise<T | undefined> {
    return (await query.execute(on)).rows[0];
  }

  /** Runs `fn` in one transaction; the callback's handle must be used for every statement. */
  async tx<T>(fn: (trx: Sql) => Promise<T>): Promise<T> {
    return (this.orm.em.fork() as Em).transactional(async (em) => fn((em as Em).getKysely() as unknown as Sql));
  }

  /**
   * A write transaction whose statements are pipelined: the ones `fn` issues together (without
   * awaiting each) travel in one round trip. Without pipelining (PGlite, or turned off) it is `tx`,
   * where Kysely runs them one after another in the same order. Either way `fn` must await every
   * statement it issued before returning. `commitWithStatements`: see pipelinedTransaction.
   */
  async writeTx<T>(fn: (trx: Sql) => Promise<T>, options: WriteTxOptions = {}): Promise<T> {
    if (!this.options.pipeline) return this.tx(fn);
    this.pool ??= (
      this.orm.em.getConnection() as unknown as { getNativeClient(): Promise<pgTypes.Pool> }
    ).getNativeClient();
    return pipelinedTransaction(await this.pool, this.pooled, fn, options);
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.pooled);
  }
}

/**
 * Awaits statements a write issued together (so `writeTx` can send them in one round trip) and
 * rethrows the first failure in issue order, but only once every one has settled: a statement
 * still queued when the transaction ends could otherwise run after its COMMIT or ROLLBACK.
 */
export async function settleAll(statements: readonly (Promise<unknown> | undefined)[]): Promise<void> {
  const outcomes = await Promise.allSettled(statements);
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * Marks a statement that updates a row many concurrent writers share (a mailbox's counters and
 * event sequence, a thread): pipelined, it goes out after the other statements issued in the same
 * turn (statement-pipeline.ts), so the row is locked for the end of the batch and the COMMIT only,
 * not while the transaction's other writes run. Statements of one turn awaited none of each other,
 * so none reads what another returns; those marked keep their order among themselves (the lock
 * order, mailbox row before thread, holds). Going last lets other transactions' inserts take KEY
 * SHARE on the row first, so it is locked explicitly only FOR NO KEY UPDATE (the core's
 * `lockMailboxRows` says why).
 */
export const hotRow = <T>(statement: RawBuilder<T>): RawBuilder<T> => sql<T>`${sql.raw(HOT_ROW_MARK)}${statement}`;

/** pg returns bigint as string and PGlite as number; the core always wants number. */
export const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
/** Timestamps come back as text on both engines; the wire wants Unix ms. */
export const ms = (v: unknown): number | null =>
  v === null || v === undefined ? null : new Date(v as string).getTime();
export const date = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(v as string));
/** A json/jsonb object or array: parsed by pg, text from PGlite. */
export const jsonValue = (v: unknown): unknown => (typeof v === 'string' ? JSON.parse(v) : v);
