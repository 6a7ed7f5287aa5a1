import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The core's SQL lives in *.store.ts files next to the service that uses it: a service
 * calls store functions and never writes a query. What counts as SQL: Kysely's `sql` tag (also
 * `sql<T>` and its helpers sql.raw/ref/table/join/lit/val), the query builder's entry points, and a
 * raw query string handed to a connection.
 */
const SQL = [
  /\bsql(?:<[^`]*?>)?`/,
  /\bsql\.(?:raw|ref|table|join|id|lit|val)\(/,
  /\.(?:selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto|with)\(\s*['"`]/,
  /\.(?:execute|query)\(\s*['"`]\s*(?:select|insert|update|delete|with|lock|set)\b/i,
];

/** Non-store files allowed to hold SQL, each with its reason. Keep this list short. */
const EXEMPT: Record<string, string> = {};

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

/** `file:line` of every place `file` writes SQL (comments aside; a `sql<...>` type may span lines). */
function sqlLines(file: string): string[] {
  const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, (c) => c.replace(/[^\n]/g, ' '));
  const at = new Set<number>();
  for (const re of SQL)
    for (const m of text.matchAll(new RegExp(re.source, re.flags + 'g')))
      at.add(text.slice(0, m.index).split('\n').length);
  return [...at].sort((a, b) => a - b).map((line) => `${file}:${line}`);
}

describe('SQL of the core lives in *.store.ts files', () => {
  const core = files('src/core').map((f) => f.split(path.sep).join('/'));

  it('no service, view or rule file of src/core writes SQL', () => {
    const offenders = core.filter((f) => !f.endsWith('.store.ts') && !(f in EXEMPT)).flatMap(sqlLines);
    expect(offenders).toEqual([]);
  });

  it('every exemption still names a file that holds SQL', () => {
    for (const f of Object.keys(EXEMPT)) expect(sqlLines(f), f).not.toEqual([]);
  });

  it('the scan recognises each way of writing SQL', () => {
    const samples = [
      'await sql`select 1`.execute(db);',
      'db.one(sql<{ n: number }>`select count(*) as n from message`)',
      'sql.raw(text)',
      "db.selectFrom('message').selectAll()",
      "trx.insertInto('thread').values(row)",
      "em.getConnection().execute('select 1')",
    ];
    for (const s of samples)
      expect(
        SQL.some((re) => re.test(s)),
        s,
      ).toBe(true);
    expect(core.some((f) => f.endsWith('.store.ts') && sqlLines(f).length > 0)).toBe(true);
  });
});
