import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import config, { filesWithoutHarness, FRESH_PROCESS } from '../../vitest.config.js';

// The postgres and pglite projects run their files one after another in a shared worker (vitest's
// `isolate: false`): a module mock, a stubbed global or environment variable, or a patched
// prototype left behind by one file would reach the files after it. These hold the shared files to
// what that needs; a file that cannot live with it goes in FRESH_PROCESS (a process of its own).
const ROOT = path.resolve(import.meta.dirname, '../..');
type Project = { test: { name: string; include?: string[]; exclude?: string[]; isolate?: boolean } };
const projects = (config as { test: { projects: Project[] } }).test.projects;
const OWN = ['test/unit/', 'test/k8s/', 'test/reliability/', 'test/browser/'];

/** The files the engine projects run in a shared worker. */
function sharedFiles(): string[] {
  const storageFree = new Set(filesWithoutHarness());
  return readdirSync(path.join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .map((f) => `test/${f}`)
    .filter((f) => f.endsWith('.test.ts') && !f.includes('/fixtures/') && !storageFree.has(f))
    .filter((f) => !FRESH_PROCESS.includes(f) && !OWN.some((dir) => f.startsWith(dir)));
}

describe('files sharing a worker', () => {
  it('are the engine projects, which share; the fresh-process projects hold FRESH_PROCESS and do not', () => {
    for (const engine of ['postgres', 'pglite']) {
      const shared = projects.find((p) => p.test.name === engine)?.test;
      const fresh = projects.find((p) => p.test.name === `${engine}-fresh`)?.test;
      if (!shared) continue;
      expect(shared.isolate).toBe(false);
      expect(shared.exclude).toEqual(expect.arrayContaining(FRESH_PROCESS));
      expect(fresh?.include).toEqual(FRESH_PROCESS);
      expect(fresh?.isolate).not.toBe(false);
    }
    for (const file of FRESH_PROCESS) expect(existsSync(path.join(ROOT, file)), file).toBe(true);
  });

  it('mock no module and stub no global or environment variable, and put back every prototype they patch', () => {
    const files = sharedFiles();
    expect(files.length).toBeGreaterThan(100);
    const problems: string[] = [];
    for (const file of files) {
      const source = readFileSync(path.join(ROOT, file), 'utf8');
      for (const m of source.matchAll(/vi\.(mock|doMock|stubGlobal|stubEnv|resetModules)\(/g))
        problems.push(`${file}: vi.${m[1]}`);
      for (const m of source.matchAll(/process\.env\.([A-Z_]+)\s*=[^=]/g)) problems.push(`${file}: sets ${m[1]}`);
      // A patch is `X.prototype.y = …`; putting it back is a second assignment to the same member.
      const patched = new Map<string, number>();
      for (const m of source.matchAll(/([\w.]+\.prototype\.\w+)\s*=[^=]/g))
        patched.set(m[1]!, (patched.get(m[1]!) ?? 0) + 1);
      for (const [member, n] of patched) if (n < 2) problems.push(`${file}: patches ${member} without putting it back`);
    }
    expect(problems).toEqual([]);
  });
});
