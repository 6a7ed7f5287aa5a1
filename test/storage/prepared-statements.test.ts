import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, sql } from '../../src/storage/database.js';
import { openOrm, type Orm } from '../../src/storage/orm.js';
import { StatementNames } from '../../src/storage/prepared-statements.js';
import { createScratchDatabase, ENGINE } from '../support/harness.js';

describe('StatementNames', () => {
  it('names a parameterised text on its second run, the same name after, a new one after retireAll', () => {
    const names = new StatementNames();
    const text = 'select 1 where $1::int = 1';
    expect(names.nameOf(text)).toBeUndefined();
    const first = names.nameOf(text);
    expect(first).toMatch(/^s0_/);
    expect(names.nameOf(text)).toBe(first);
    names.retireAll();
    expect(names.nameOf(text)).toBeUndefined();
    expect(names.nameOf(text)).toMatch(/^s1_/);
  });

  it('stops naming at its bound (dynamic SQL must not grow it without end)', () => {
    const names = new StatementNames();
    for (let i = 0; i < 1000; i++) {
      names.nameOf(`select ${i} where $1::int = 1`);
      names.nameOf(`select ${i} where $1::int = 1`);
    }
    expect(names.size).toBe(400);
    expect(names.nameOf('select -1 where $1::int = 1')).toBeUndefined();
    expect(names.nameOf('select -1 where $1::int = 1')).toBeUndefined();
  });
});

// On a real PostgreSQL connection (pool of one, so every statement runs on the same session).
describe.runIf(ENGINE === 'postgres')('prepared statements on PostgreSQL', () => {
  let scratch: { url: string; drop(): Promise<void> };
  const opened: Orm[] = [];
  beforeAll(async () => {
    scratch = await createScratchDatabase();
  });
  afterAll(async () => {
    for (const orm of opened) await orm.close(true);
    await scratch?.drop();
  });
  const open = async (preparedStatements: boolean) => {
    const orm = await openOrm({ databaseUrl: scratch.url, poolMax: 1, preparedStatements });
    opened.push(orm);
    return new Database(orm);
  };
  const prepared = async (db: Database) =>
    (await db.rows(sql<{ statement: string }>`select statement from pg_prepared_statements`)).map((r) => r.statement);

  it('a repeated parameterised statement is prepared once on the connection; off, none is', async () => {
    for (const on of [true, false]) {
      const db = await open(on);
      for (let i = 0; i < 3; i++) await db.rows(sql`select ${i}::int + 1 as n`);
      const statements = await prepared(db);
      expect(statements.some((s) => s.includes('::int + 1 as n'))).toBe(on);
    }
  });

  it('after a migration changes a table under a prepared select *, the statement fails once and then runs', async () => {
    const db = await open(true);
    await sql`create table prepared_probe (a int)`.execute(db.db);
    await sql`insert into prepared_probe values (1)`.execute(db.db);
    const read = () => db.rows(sql<{ a: number }>`select * from prepared_probe where a = ${1}`);
    await read();
    await read(); // now prepared
    await sql`alter table prepared_probe add column b int`.execute(db.db);
    await expect(read()).rejects.toThrow(/cached plan must not change result type/);
    expect(await read()).toEqual([{ a: 1, b: null }]);
  });

  // The callback form (serviceClient) must hand PostgreSQL's error to the caller, through Kysely,
  // which extends its stack with the caller's frames, and leave the connection usable.
  it("a failing statement rejects with PostgreSQL's error and a stack back to its caller, named or not", async () => {
    for (const on of [true, false]) {
      const db = await open(on);
      const fail = () => db.rows(sql`select ${'x'}::int as n`);
      for (let i = 0; i < 3; i++) {
        const err = (await fail().catch((e: unknown) => e)) as Error & { code?: string };
        expect(err.code).toBe('22P02'); // invalid_text_representation
        expect(err.stack).toContain('prepared-statements.test');
      }
      // The connection is still usable after the failures.
      expect(await db.rows(sql<{ n: number }>`select ${2}::int as n`)).toEqual([{ n: 2 }]);
    }
  });
});
