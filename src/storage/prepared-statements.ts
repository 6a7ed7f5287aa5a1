import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type pgTypes from 'pg';

// MikroORM pins its own node-postgres; the pool it builds must get a Client of that copy.
export const pg = createRequire(import.meta.resolve('@mikro-orm/postgresql'))('pg') as typeof pgTypes;

/** A statement text is named (prepared once per connection) on its second run, not its first. */
const PREPARE_ON_RUN = 2;
/** Texts this process names at most: dynamic SQL (a varying `in` list) must not grow it forever. */
const MAX_NAMED = 400;
/** Texts counted at most while they wait for their second run. */
const MAX_COUNTED = 4_000;

/** PostgreSQL's answer when a prepared `select *` meets a table whose columns changed (a migration ran). */
export const isStaleRowType = (err: unknown) =>
  (err as { code?: string }).code === '0A000' && /cached plan must not change result type/.test(String(err));

/**
 * Which statement texts run as named (prepared) statements: Kysely sends every statement unnamed,
 * so PostgreSQL parses and plans it on every run. Named, a connection parses it once and, after
 * five runs, may keep a generic plan: bench/smtp measured 0.05–0.7 ms of planning per statement.
 * Only parameterised texts are named (migrations and BEGIN/COMMIT have none, and a
 * multi-statement text cannot be prepared).
 */
export class StatementNames {
  private readonly runs = new Map<string, number>();
  private readonly names = new Map<string, string>();
  private generation = 0;

  /** The name to run `text` under, or undefined to run it unnamed. */
  nameOf(text: string): string | undefined {
    const name = this.names.get(text);
    if (name !== undefined) return name;
    if (this.names.size >= MAX_NAMED) return undefined;
    const runs = (this.runs.get(text) ?? 0) + 1;
    if (runs < PREPARE_ON_RUN) {
      if (this.runs.size < MAX_COUNTED) this.runs.set(text, runs);
      return undefined;
    }
    this.runs.delete(text);
    const named = `s${this.generation}_${createHash('sha1').update(text).digest('base64url').slice(0, 20)}`;
    this.names.set(text, named);
    return named;
  }

  /**
   * A prepared statement failed because its table's row type changed under it: every name is
   * retired (new names are parsed afresh); the statement that failed fails once, like any query
   * running across a migration.
   */
  retireAll(): void {
    this.generation++;
    this.names.clear();
  }

  get size(): number {
    return this.names.size;
  }
}

type QueryCallback = (err: Error | null, result: unknown) => void;
type CallbackQuery = (config: unknown, values: unknown, callback: QueryCallback) => void;

/**
 * The pg Client class the pool builds: Kysely's `query(text, values)` runs in pg's callback form,
 * parameterised texts by name when `names` is given (see StatementNames).
 *
 * Why the callback form: pg's promise form (`new Promise(…).catch(…)` around each query) made
 * V8 promote every query's rows to the old generation (measured on the list: 9 MB promoted per
 * scavenge, 10–25 ms scavenges, GC 0.11 ms per request; the callback form: none, like the bare
 * stack). An error needs no stack of its own here: Kysely's executeQuery extends it with its
 * caller's frames, in this form as in the promise form.
 */
export function serviceClient(names?: StatementNames): typeof pgTypes.Client {
  return class ServiceClient extends pg.Client {
    /** The names this pool's connections run statements under; pipelined batches use them too (statement-pipeline.ts). */
    static readonly statementNames = names;

    // pg's overloads; Kysely calls query(text, values) and awaits the promise.
    override query(...args: unknown[]): never {
      const [text, values] = args;
      if (typeof text !== 'string' || args.length > 2 || (values !== undefined && !Array.isArray(values)))
        return (super.query as (...a: unknown[]) => never)(...args);
      const name = values && values.length > 0 ? names?.nameOf(text) : undefined;
      const config = name === undefined ? text : { name, text, values };
      const run = super.query as unknown as CallbackQuery;
      return new Promise((resolve, reject) => {
        run.call(this, config, name === undefined ? values : undefined, (err, result) => {
          if (!err) return resolve(result);
          if (name !== undefined && isStaleRowType(err)) names!.retireAll();
          reject(err);
        });
      }) as never;
    }
  } as unknown as typeof pgTypes.Client;
}
