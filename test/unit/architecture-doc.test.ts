import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// ARCHITECTURE.md must describe the tree as it is: every folder of its tree and every file of its
// "rule → core file → test file" table exists, and every folder of src/ has its line in the tree.
const ROOT = path.resolve(import.meta.dirname, '../..');
const doc = readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');

const section = (title: string): string => {
  const start = doc.indexOf(`\n## ${title}\n`);
  expect(start, `ARCHITECTURE.md has a "## ${title}" section`).toBeGreaterThan(-1);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end === -1 ? undefined : end);
};

/** The folders the tree lists: the first word of each line of its code block that ends with a slash. */
function treeFolders(): string[] {
  const block = /```\n([\s\S]*?)```/.exec(section('The tree'))?.[1] ?? '';
  return block
    .split('\n')
    .map((line) => /^(\S+\/)\s/.exec(line)?.[1])
    .filter((f): f is string => f !== undefined);
}

/** Repository paths in backticks in the rule table's core-file and test-file columns. */
function tablePaths(): string[] {
  const rows = section('Rules and where they live')
    .split('\n')
    .filter((l) => l.startsWith('|') && !l.startsWith('| ---') && !l.startsWith('| rule'));
  expect(rows.length).toBeGreaterThan(30);
  return rows.flatMap((row) => {
    const cells = row.split('|').slice(2, 4).join(' ');
    return [...cells.matchAll(/`([^`\s]+\.(?:ts|cjs|js|md))`/g)].map((m) => m[1]!);
  });
}

function srcFolders(dir = 'src'): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => {
      const sub = `${dir}/${e.name}`;
      return [`${sub}/`, ...srcFolders(sub)];
    });
}

describe('ARCHITECTURE.md', () => {
  it('lists only folders that exist', () => {
    const folders = treeFolders();
    expect(folders.length).toBeGreaterThan(40);
    expect(folders.filter((f) => !existsSync(path.join(ROOT, f)))).toEqual([]);
  });

  it('lists every folder of src/', () => {
    const listed = new Set(treeFolders());
    expect(srcFolders().filter((f) => !listed.has(f))).toEqual([]);
  });

  it('names only core and test files that exist in its rule table', () => {
    const paths = tablePaths();
    expect(paths.length).toBeGreaterThan(60);
    expect(paths.filter((p) => !existsSync(path.join(ROOT, p)))).toEqual([]);
  });

  it('names a test file for every rule it lists', () => {
    const rows = section('Rules and where they live')
      .split('\n')
      .filter((l) => l.startsWith('|') && !l.startsWith('| ---') && !l.startsWith('| rule'));
    const untested = rows.filter((r) => !/`test\/[^`]+\.test\.ts`/.test(r.split('|')[3] ?? ''));
    expect(untested.map((r) => r.split('|')[1]!.trim())).toEqual([]);
  });

  it('is linked from the README', () => {
    expect(readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain('(ARCHITECTURE.md)');
  });
});
