import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

// Tests start the `mailbox` command as a child process about 150 times a run. From the compiled
// build a start is about a second faster than under tsx, which compiles the sources again in every
// child; `make test` builds first. A build older than src/ would test stale code, so then the child
// runs the sources under tsx, as it does where nothing was built.

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** Modification times of the files under `dir` whose names match `ext`. */
const mtimes = (dir: string, ext: RegExp): number[] =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && ext.test(e.name))
    .map((e) => statSync(path.join(e.parentPath, e.name)).mtimeMs);

const freshness = new Map<string, boolean>();

/** dist/src was built after the last change under src/ (tsc writes every output on each build). */
export function buildIsFresh(root = ROOT): boolean {
  let fresh = freshness.get(root);
  if (fresh === undefined) {
    try {
      const built = mtimes(path.join(root, 'dist/src'), /\.js$/);
      fresh = built.length > 0 && Math.min(...built) >= Math.max(...mtimes(path.join(root, 'src'), /\.ts$/));
    } catch {
      fresh = false; // no dist/ yet
    }
    freshness.set(root, fresh);
  }
  return fresh;
}

/** Node's arguments that run `mailbox` from ROOT: the fresh build, else the sources under tsx. */
export function mailboxArgs(): string[] {
  return buildIsFresh() ? ['dist/src/cli.js'] : ['--import', 'tsx', 'src/cli.ts'];
}
