import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { externalHosts, relativeLinks, historyMentions } from '../support/doc-links.js';

// The README is a front door, and the docs stay inside the repository: the README fits in 16 KB,
// no document links outside the repository (a clone has nothing beside it) or narrates development
// history, and every relative link of the README and docs/ names a file of the repository.
const ROOT = path.resolve(import.meta.dirname, '../..');
const README_MAX_BYTES = 16 * 1024;

function markdownUnder(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return markdownUnder(rel);
    return e.name.endsWith('.md') ? [rel] : [];
  });
}

const linkedDocs = ['README.md', ...markdownUnder('docs')];
const allDocs = [...linkedDocs, 'ARCHITECTURE.md'];
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

describe('the README and docs/', () => {
  it('keep the README within 16 KB', () => {
    expect(statSync(path.join(ROOT, 'README.md')).size).toBeLessThanOrEqual(README_MAX_BYTES);
  });

  it('link nothing outside the repository', () => {
    const outside = allDocs.flatMap((file) => [
      ...externalHosts(read(file)).map((host) => `${file}: ${host}`),
      ...(read(file).includes('../shared') ? [`${file}: ../shared`] : []),
    ]);
    expect(outside).toEqual([]);
  });

  it('narrate no development history (session or issue numbers)', () => {
    const history = allDocs.flatMap((file) => historyMentions(read(file)).map((m) => `${file}: ${m}`));
    expect(history).toEqual([]);
  });

  it('link only files that exist in the repository', () => {
    const broken = linkedDocs.flatMap((file) =>
      relativeLinks(read(file))
        .filter((target) => {
          const resolved = path.resolve(ROOT, path.dirname(file), target);
          return !resolved.startsWith(ROOT + path.sep) || !existsSync(resolved);
        })
        .map((target) => `${file}: ${target}`),
    );
    expect(broken).toEqual([]);
  });

  it('link the specification and every doc from the README', () => {
    const readme = read('README.md');
    const unlinked = markdownUnder('docs')
      .filter((f) => !f.startsWith('docs/design/') || f === 'docs/design/README.md')
      .filter((f) => !readme.includes(`](${f})`));
    expect(unlinked).toEqual([]);
  });
});

describe('the doc link rules', () => {
  it('take localhost, loopback and example hosts as inside, any other host as outside', () => {
    const text = [
      'http://127.0.0.1:8080/mcp http://localhost:3000 https://[::1]/x',
      'https://registry.example.com/x http://bot.example.test http://example.org',
      '[a](https://github.com/x/y) and https://docs.rs/z, but not https://… or `https://`',
    ].join('\n');
    expect(externalHosts(text)).toEqual(['github.com', 'docs.rs']);
  });

  it('find relative links and images, not URLs, anchors or code', () => {
    const text = [
      '[a](docs/api.md) ![b](docs/screenshots/x.png) [c](#quick-start) [d](https://x.org)',
      '[e](api.md#errors "title") [f](mailto:a@b.c) `[g](not-a-link.md)`',
      '```',
      '[h](inside-a-code-block.md)',
      '```',
    ].join('\n');
    expect(relativeLinks(text)).toEqual(['docs/api.md', 'docs/screenshots/x.png', 'api.md']);
  });

  it('find session and issue numbers, not SMTP sessions', () => {
    expect(historyMentions('built in session 18; (issue 15) Issue 6, "Durability"; sessions 20–21')).toEqual([
      'session 18',
      'issue 15',
      'Issue 6',
      'sessions 20',
    ]);
    expect(historyMentions('an SMTP session ends after SMTP_SESSION_TIMEOUT; 5 sessions at once')).toEqual([]);
  });
});
