import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Em, Orm } from './orm.js';
import type { DB } from './schema.js';

/**
 * A Kysely handle bound either to the pool or to one open transaction, typed with the schema the
 * migrations create (src/storage/schema.ts, `make db-types`).
 */
export type Sql = Kysely<DB>;
/** A piece of SQL (the `sql` tag's value) that a query embeds. */
export type SqlFragment = RawBuilder<unknown>;
export { sql };

/**
 * The storage entry point for the core. SQL is written with Kysely's `sql` tag (real bind
 * parameters on both pg and PGlite); `tx` runs a MikroORM transaction so everything written
 * inside commits or rolls back together.
 */
export class Database {
  private readonly pooled: Sql;

  constructor(readonly orm: Orm) {
    this.pooled = (orm.em.fork() as Em).getKysely() as unknown as Sql;
  }

  get db(): Sql {
    return this.pooled;
  }

  async rows<T>(query: RawBuilder<T>, on: Sql = this.pooled): Promise<T[]> {
    return (await query.execute(on)).rows;
  }

  async one<T>(query: RawBuilder<T>, on: Sql = this.pooled): Promise<T | undefined> {
    return (await query.execute(on)).rows[0];
  }

  /** Runs `fn` in one transaction; the callback's handle must be used for every statement. */
  async tx<T>(fn: (trx: Sql) => Promise<T>): Promise<T> {
    return (this.orm.em.fork() as Em).transactional(async (em) => fn((em as Em).getKysely() as unknown as Sql));
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.pooled);
  }
}

/** pg returns bigint as string and PGlite as number; the core always wants number. */
export const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
/** Timestamps come back as text on both engines; the wire wants Unix ms. */
export const ms = (v: unknown): number | null =>
  v === null || v === undefined ? null : new Date(v as string).getTime();
export const date = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(v as string));
/** A json/jsonb object or array: parsed by pg, text from PGlite. */
export const jsonValue = (v: unknown): unknown => (typeof v === 'string' ? JSON.parse(v) : v);
