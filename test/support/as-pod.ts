import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildIsFresh } from './mailbox-command.js';
import { memoryCgroup, type MemoryCgroup } from './memory-cgroup.js';

// A service process started as a pod of the Helm chart starts it: the image's ENTRYPOINT
// (Dockerfile: its Node flags, the OpenTelemetry preload, the compiled build) under the memory
// limit of the Deployment. Memory figures are only meaningful that way: tsx keeps the sources it
// compiled (~60 MB more RSS idle), and without a limit V8 sizes its heap from the machine.

export interface Pod {
  /** The command to spawn, in the group when there is one. */
  argv: string[];
  /** What runs: the compiled build, or tsx when dist/ is missing or older than src/. */
  runtime: 'build' | 'tsx (no fresh build: make build)';
  /** The group it runs in, or why there is none (not root, no memory controller). */
  cgroup: MemoryCgroup | string;
}

/** The image's ENTRYPOINT with /app as `root`. */
function entrypoint(root: string): string[] {
  const line = /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(path.join(root, 'Dockerfile'), 'utf8'))?.[1];
  if (!line) throw new Error('Dockerfile has no exec-form ENTRYPOINT');
  return (JSON.parse(line) as string[]).map((a) => a.replace(/^\/app\//, `${root}/`));
}

/** How to start `serve --roles <roles>` as the chart's pod does, with a memory limit of `limitMb`. */
export function asPod(root: string, roles: string, limitMb: number): Pod {
  const entry = entrypoint(root);
  const fresh = buildIsFresh(root);
  const flags = entry.slice(1, entry.indexOf('--import'));
  const node = fresh
    ? [process.execPath, ...entry.slice(1), 'serve', '--roles', roles]
    : [process.execPath, ...flags, '--import', 'tsx', 'src/cli.ts', 'serve', '--roles', roles];
  const made = memoryCgroup(limitMb);
  const cgroup = 'unavailable' in made ? made.unavailable : made;
  // The process joins the group before node starts: V8 sizes its heap at start.
  const argv =
    typeof cgroup === 'string' ? node : ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"', cgroup.procsFile, ...node];
  return { argv, runtime: fresh ? 'build' : 'tsx (no fresh build: make build)', cgroup };
}
