import { setImmediate } from 'node:timers';
import type pgTypes from 'pg';
import { Kysely, type CompiledQuery, type DatabaseConnection, type QueryResult } from 'kysely';
import type { DB } from './schema.js';
import { isStaleRowType, pg, type StatementNames } from './prepared-statements.js';

/**
 * Pipelined transactions on PostgreSQL: the statements a write issues together (without awaiting
 * one before the next) go to the server as one write with one Sync, and come back as one answer.
 * On this kind of machine every round trip costs both processes a wake-up (bench/smtp: ~0.3 ms of
 * CPU per statement on 2 shared cores), so a message written in 8 statements pays for 2 round
 * trips (the batch with BEGIN, then COMMIT) instead of 10.
 *
 * Semantics are the protocol's (PostgreSQL docs, "Pipeline Mode"): statements run in order; when
 * one fails, the server skips the rest of its batch, and the transaction is aborted, so every
 * later statement rejects with the same error and COMMIT is never sent. Results are those of pg
 * (same type parsers, named statements shared with prepared-statements.ts).
 */

interface PgResult {
  command: string | null;
  rowCount: number | null;
  rows: unknown[];
  addFields(fields: unknown): void;
  parseRow(fields: unknown): unknown;
  addRow(row: unknown): void;
  addCommandComplete(msg: unknown): void;
}
interface PgConnection {
  stream: { cork?(): void; uncork?(): void };
  parsedStatements: Record<string, string>;
  parse(q: { text: string; name: string; types: unknown[] }): void;
  bind(c: { portal: string; statement: string; values: unknown[] }): void;
  describe(m: { type: 'P'; name: string }): void;
  execute(c: { portal: string; rows: number }): void;
  sync(): void;
  sendCopyFail(msg: string): void;
  on(event: 'parseComplete', fn: () => void): void;
  off(event: 'parseComplete', fn: () => void): void;
}
const pgInternals = pg as unknown as {
  Result: new (rowMode: undefined, types: unknown) => PgResult;
  utils: { prepareValue(v: unknown): unknown };
};

/** The comment `hotRow` (database.ts) puts before a statement: it goes last in its batch. */
export const HOT_ROW_MARK = '/* hot row */ ';

interface Pending {
  text: string;
  values: readonly unknown[];
  resolve(result: QueryResult<unknown> & { command: string | null }): void;
  reject(err: unknown): void;
}

/**
 * Statements written as one batch: Parse (first time a name is seen on the connection)/Bind/
 * Describe/Execute for each, then one Sync. A pg Submittable (the interface pg-cursor uses): the
 * client hands it the connection and the backend's messages until ReadyForQuery or an error.
 */
class StatementBatch {
  /**
   * Called once the batch is answered or failed. A no-op of its own, so that the pg instrumentation
   * (which wraps only a callback that is there) ends its span here.
   */
  callback: (err: unknown, result?: unknown) => void = () => undefined;
  private index = 0;
  private result: PgResult;
  /** Per Parse sent, in order: the name it creates (null: the unnamed statement). */
  private readonly parses: { name: string; text: string }[] = [];
  private parsedCount = 0;
  private connection: PgConnection | null = null;
  private readonly onParseComplete = () => {
    const p = this.parses[this.parsedCount++];
    if (p && p.name && this.connection) this.connection.parsedStatements[p.name] = p.text;
  };

  constructor(
    private readonly statements: Pending[],
    private readonly names: StatementNames | undefined,
    private readonly types: unknown,
  ) {
    this.result = new pgInternals.Result(undefined, types);
  }

  /** The batch's statements, for the pg instrumentation's span (one per round trip); joined only when read. */
  get text(): string {
    return this.statements.map((s) => s.text).join(';\n');
  }

  submit(connection: PgConnection): Error | null {
    // Values are serialised before anything is written: a value pg cannot send fails the batch
    // whole, never after half of it went out.
    let values: unknown[][];
    try {
      values = this.statements.map((s) => s.values.map((v) => pgInternals.utils.prepareValue(v)));
    } catch (err) {
      return err as Error;
    }
    this.connection = connection;
    connection.on('parseComplete', this.onParseComplete);
    const inThisBatch = new Set<string>();
    connection.stream.cork?.();
    try {
      this.statements.forEach((s, i) => {
        const name = s.values.length > 0 ? (this.names?.nameOf(s.text) ?? '') : '';
        if (!name || (connection.parsedStatements[name] === undefined && !inThisBatch.has(name))) {
          connection.parse({ text: s.text, name, types: [] });
          this.parses.push({ name, text: s.text });
          if (name) inThisBatch.add(name);
        }
        connection.bind({ portal: '', statement: name, values: values[i]! });
        connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
      });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(msg: { fields: unknown }): void {
    this.result.addFields(msg.fields);
  }

  handleDataRow(msg: { fields: unknown }): void {
    this.result.addRow(this.result.parseRow(msg.fields));
  }

  handleCommandComplete(msg: unknown): void {
    this.result.addCommandComplete(msg);
    this.settleCurrent();
  }

  handleEmptyQuery(): void {
    this.settleCurrent();
  }

  handleReadyForQuery(): void {
    this.detach();
    // Every statement answered (a batch that ran to its Sync); nothing is left to settle.
    const left = this.statements.slice(this.index);
    for (const s of left) s.reject(new Error('PostgreSQL ended the batch without answering this statement'));
    this.callback(null, undefined);
  }

  /** The backend's error (the rest of the batch was skipped) or the connection's: every unanswered statement gets it. */
  handleError(err: unknown): void {
    this.detach();
    if (isStaleRowType(err)) this.names?.retireAll();
    for (const s of this.statements.slice(this.index)) s.reject(err);
    this.index = this.statements.length;
    this.callback(err);
  }

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: PgConnection): void {
    connection.sendCopyFail('COPY is not supported in a pipelined transaction');
  }

  handleCopyData(): void {}

  private settleCurrent(): void {
    const s = this.statements[this.index++];
    const r = this.result;
    this.result = new pgInternals.Result(undefined, this.types);
    const counted = r.command === 'INSERT' || r.command === 'UPDATE' || r.command === 'DELETE' || r.command === 'MERGE';
    s?.resolve({
      rows: r.rows,
      numAffectedRows: counted ? BigInt(r.rowCount ?? 0) : undefined,
      command: r.command,
    });
  }

  private detach(): void {
    this.connection?.off('parseComplete', this.onParseComplete);
  }
}

/**
 * One pooled connection in a pipelined transaction, as Kysely's DatabaseConnection: every
 * statement is queued and the queue goes out on the next turn of the event loop, so statements
 * issued together share one round trip. After a failure everything queued later rejects with it.
 */
class PipelinedConnection implements DatabaseConnection {
  private queue: Pending[] = [];
  private scheduled = false;
  /** The COMMIT that goes out last in the next batch (`commitWithNextBatch`); nothing may follow it. */
  private commitLast: Pending | null = null;
  private sealed = false;
  failure: unknown = null;

  constructor(
    private readonly client: pgTypes.PoolClient,
    private readonly names: StatementNames | undefined,
  ) {}

  executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    return this.run(compiled.sql, compiled.parameters) as Promise<QueryResult<R>>;
  }

  streamQuery(): AsyncIterableIterator<never> {
    throw new Error('streaming is not supported in a pipelined transaction');
  }

  /** Queues `text`; `evenAfterFailure` for the ROLLBACK that ends a failed transaction. */
  run(
    text: string,
    values: readonly unknown[] = [],
    evenAfterFailure = false,
  ): Promise<QueryResult<unknown> & { command: string | null }> {
    return new Promise((resolve, reject) => {
      if (this.sealed && !evenAfterFailure)
        return reject(new Error(`issued after its transaction's COMMIT went out (commitWithStatements): ${text}`));
      if (this.failure !== null && !evenAfterFailure) return reject(this.failure);
      this.queue.push(this.pending(text, values, resolve, reject));
      this.schedule();
    });
  }

  /**
   * Queues COMMIT to go out at the end of the next batch, after everything issued before that
   * batch leaves (the current turn of the event loop); the connection then refuses new statements.
   */
  commitWithNextBatch(): Promise<QueryResult<unknown> & { command: string | null }> {
    return new Promise((resolve, reject) => {
      this.commitLast = this.pending('commit', [], resolve, reject);
      this.schedule();
    });
  }

  /** A statement to send; its failure becomes the connection's (every later statement gets it). */
  private pending(
    text: string,
    values: readonly unknown[],
    resolve: Pending['resolve'],
    reject: Pending['reject'],
  ): Pending {
    return {
      text,
      values,
      resolve,
      reject: (err) => {
        this.failure ??= err;
        reject(err);
      },
    };
  }

  /** The queue goes out on the next turn of the event loop. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const statements = lastOfTheirBatch(this.queue.splice(0));
    if (this.commitLast) {
      statements.push(this.commitLast);
      this.commitLast = null;
      this.sealed = true;
    }
    if (statements.length === 0) return;
    const types = (this.client as unknown as { _types: unknown })._types;
    this.client.query(new StatementBatch(statements, this.names, types) as unknown as pgTypes.QueryConfig);
  }
}

/**
 * The batch in issue order, except that statements marked with HOT_ROW_MARK (database.ts `hotRow`)
 * go after the others, in their own issue order: the rows they lock stay locked for the end of the
 * batch and the COMMIT only (bench/smtp: the worker's transactions waited on each other's mailbox
 * rows). Nothing issued in one turn awaited another statement of it, so none depends on another's answer.
 */
function lastOfTheirBatch(statements: Pending[]): Pending[] {
  if (!statements.some((s) => s.text.startsWith(HOT_ROW_MARK))) return statements;
  return [
    ...statements.filter((s) => !s.text.startsWith(HOT_ROW_MARK)),
    ...statements.filter((s) => s.text.startsWith(HOT_ROW_MARK)),
  ];
}

/** The names of the pool's Client class (prepared-statements.ts), so a batch names what single queries name. */
const namesOf = (pool: pgTypes.Pool): StatementNames | undefined =>
  (pool.options as { Client?: { statementNames?: StatementNames } }).Client?.statementNames;

/**
 * Runs `fn` in one transaction on a connection of `pool`, its statements pipelined (see above).
 * `base` lends its query compiler: the handle `fn` gets compiles like every other Kysely handle,
 * and each statement is queued the moment it is executed, in call order.
 *
 * `commitWithStatements`: COMMIT travels in the batch of `fn`'s statements (one round trip for the
 * whole transaction). Only for an `fn` that issues all its statements at once and decides nothing
 * on their answers: each must fail on its own when the write must not commit (a statement issued
 * later is refused, after the COMMIT already went out).
 */
export async function pipelinedTransaction<T>(
  pool: pgTypes.Pool,
  base: Kysely<DB>,
  fn: (trx: Kysely<DB>) => Promise<T>,
  options: { commitWithStatements?: boolean } = {},
): Promise<T> {
  const client = await pool.connect();
  const connection = new PipelinedConnection(client, namesOf(pool));
  const executor = base.getExecutor().withConnectionProvider({
    provideConnection: (consumer) => consumer(connection),
  });
  // Kysely's own shape for a handle on an existing executor (how it builds its Transaction).
  const trx = new Kysely<DB>({ config: {}, dialect: {}, driver: {}, executor } as unknown as ConstructorParameters<
    typeof Kysely<DB>
  >[0]);
  const begin = connection.run('begin');
  begin.catch(() => undefined); // its failure reaches fn's statements and the commit
  let broken = false;
  try {
    let result: T;
    let commit: Awaited<ReturnType<PipelinedConnection['run']>>;
    if (options.commitWithStatements) {
      // BEGIN, fn's statements and COMMIT in one batch: one round trip. A failed statement makes
      // the server skip the rest of the batch, COMMIT included (its promise rejects with that error).
      const [done, committed] = await Promise.allSettled([fn(trx), connection.commitWithNextBatch()]);
      if (done.status === 'rejected') {
        // fn failed other than through a statement: what it issued is committed all the same.
        if (committed.status === 'fulfilled' && committed.value.command === 'COMMIT')
          throw new Error('committed although the transaction failed outside its statements (commitWithStatements)', {
            cause: done.reason,
          });
        throw done.reason;
      }
      if (committed.status === 'rejected') throw committed.reason;
      result = done.value;
      commit = committed.value;
    } else {
      result = await fn(trx);
      commit = await connection.run('commit');
    }
    // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK: never report that as durable.
    if (commit.command !== 'COMMIT') throw connection.failure ?? new Error(`COMMIT answered ${commit.command}`);
    return result;
  } catch (err) {
    await connection.run('rollback', [], true).catch(() => {
      broken = true; // the connection is gone or confused: the pool must not lend it again
    });
    throw err;
  } finally {
    client.release(broken ? true : undefined);
  }
}
