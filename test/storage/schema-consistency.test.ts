import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrate, openOrm, type Em, type Orm } from '../../src/storage/orm.js';
import { renderDatabaseTypes, SCHEMA_FILE, withMigratedScratchDatabase } from '../../scripts/db-types-lib.js';
import { ENGINE } from '../support/harness.js';

/** What the ORM would change to make the database match the entities: nothing, when both agree. */
async function entityDrift(orm: Orm): Promise<string> {
  return (await orm.schema.getUpdateSchemaSQL({ wrap: false })).trim();
}

/** `table.column nullable|not null` for every column of the migrated database (the migrations table aside). */
async function migratedColumns(orm: Orm): Promise<string[]> {
  const rows = await sql<{ table_name: string; column_name: string; is_nullable: string }>`
    select table_name, column_name, is_nullable from information_schema.columns
    where table_schema = 'public' and table_name <> 'mikro_orm_migrations'`.execute((orm.em.fork() as Em).getKysely());
  return rows.rows
    .map((r) => `${r.table_name}.${r.column_name} ${r.is_nullable === 'YES' ? 'null' : 'not null'}`)
    .sort();
}

/** The same list read from src/storage/schema.ts (the `DB` interface and the per-table interfaces). */
function declaredColumns(source: string): string[] {
  const interfaces = new Map<string, string>();
  for (const m of source.matchAll(/export interface (\w+) \{\n([\s\S]*?)\n\}/g)) interfaces.set(m[1]!, m[2]!);
  const out: string[] = [];
  for (const line of (interfaces.get('DB') ?? '').split('\n')) {
    const [, table, type] = /^\s*(\w+): (\w+);$/.exec(line) ?? [];
    if (!table || !type) continue;
    for (const col of (interfaces.get(type) ?? '').split('\n')) {
      const [, name, colType] = /^\s*(\w+): (.+);$/.exec(col) ?? [];
      if (name && colType) out.push(`${table}.${name} ${/\| null\b/.test(colType) ? 'null' : 'not null'}`);
    }
  }
  return out.sort();
}

/** Opens the ORM on a database carrying every migration (a scratch PostgreSQL one, or an in-memory PGlite). */
async function withMigratedOrm(fn: (orm: Orm) => Promise<void>): Promise<void> {
  if (ENGINE === 'pglite') {
    const orm = await openOrm({});
    try {
      expect(await migrate(orm)).not.toHaveLength(0);
      await fn(orm);
    } finally {
      await orm.close(true);
    }
    return;
  }
  await withMigratedScratchDatabase(async (url) => {
    const orm = await openOrm({ databaseUrl: url, poolMax: 2 });
    try {
      await fn(orm);
    } finally {
      await orm.close(true);
    }
  });
}

// The entities (src/storage/entities) only generate migrations; the migrations are what runs, and
// src/storage/schema.ts (the Kysely type every query is checked against) is generated from them.
// A change to one of the three without the others fails here, on each engine.
describe(`entities, migrations and the generated schema type agree (${ENGINE})`, () => {
  it('a database migrated from nothing needs no change to match the entities, and its columns are those of schema.ts', async () => {
    await withMigratedOrm(async (orm) => {
      expect(await entityDrift(orm)).toBe('');
      const declared = declaredColumns(readFileSync(SCHEMA_FILE, 'utf8'));
      expect(declared.length).toBeGreaterThan(50);
      expect(await migratedColumns(orm)).toEqual(declared);
    });
  }, 120_000); // a database created and migrated from nothing: slow on a loaded machine

  it.runIf(ENGINE === 'postgres')(
    'src/storage/schema.ts is what `make db-types` generates',
    async () => {
      const fresh = await withMigratedScratchDatabase((url) => renderDatabaseTypes(url));
      expect(fresh).toContain('export interface DB {');
      expect(readFileSync(SCHEMA_FILE, 'utf8')).toBe(fresh);
    },
    120_000,
  );
});
