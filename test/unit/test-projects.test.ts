import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import config, { filesWithoutHarness } from '../../vitest.config.js';

// vitest.config.ts runs a file on both engines when it reaches test/support/harness.ts, once otherwise.
// These hold that rule: the classifier follows every kind of import, and the once-only projects hold
// no file that opens storage.
const ROOT = path.resolve(import.meta.dirname, '../..');
const work = mkdtempSync(path.join(tmpdir(), 'test-projects-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function tree(files: Record<string, string>): string {
  for (const [file, source] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
    writeFileSync(path.join(work, file), source);
  }
  return work;
}

type Project = { test: { name: string; include?: string[]; exclude?: string[] } };
const projects = (config as { test: { projects: Project[] } }).test.projects;
const project = (name: string) => projects.find((p) => p.test.name === name)!.test;

describe('which test files run on both engines', () => {
  it('follows static, side-effect, dynamic and vi.mock imports, through support files, to the harness', () => {
    // Specifiers are spliced in so this file's own source imports no harness.
    const q = (spec: string) => `'${spec}'`;
    const root = tree({
      'test/support/harness.ts': 'export const ENGINE = "postgres";\n',
      'test/support/helper.ts': `import { ENGINE } from ${q('./harness.js')};\nexport const e = ENGINE;\n`,
      'test/a/direct.test.ts': `import { ENGINE } from ${q('../support/harness.js')};\n`,
      'test/a/through-helper.test.ts': `import { e } from ${q('../support/helper.js')};\n`,
      'test/a/dynamic.test.ts': `const h = await import(${q('../support/harness.js')});\n`,
      'test/a/side-effect.test.ts': `import ${q('../support/helper.js')};\n`,
      'test/a/mocked.test.ts': `vi.mock(${q('../support/helper.js')});\n`,
      'test/a/pure.test.ts': `import { x } from ${q('../../src/core/base/ids.js')};\n`,
      'test/a/cycle.test.ts': `import ${q('./cycle-b.js')};\n`,
      'test/a/cycle-b.ts': `import ${q('./cycle.test.js')};\n`,
    });
    expect(filesWithoutHarness(root).sort()).toEqual(['test/a/cycle.test.ts', 'test/a/pure.test.ts']);
  });

  it('puts no file that opens storage in test/unit/', () => {
    const free = new Set(filesWithoutHarness());
    const unitFiles = readdirSync(path.join(ROOT, 'test/unit'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => `test/unit/${f}`);
    expect(unitFiles.length).toBeGreaterThan(0);
    expect(unitFiles.filter((f) => !free.has(f))).toEqual([]);
  });

  it('runs each storage-free file outside test/unit/ in `once`, and not again per engine', () => {
    const once = project('once').include!;
    expect(once).toContain('test/mcp/route-order.test.ts');
    expect(once).not.toContain('test/smtp/submission-auth.test.ts');
    for (const engine of ['postgres', 'pglite']) {
      const p = projects.find((x) => x.test.name === engine)?.test;
      if (p) expect(p.exclude).toEqual(expect.arrayContaining(once));
    }
    for (const file of once) expect(existsSync(path.join(ROOT, file)), file).toBe(true);
  });
});
