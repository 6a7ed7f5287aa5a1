import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { PrivatePostgres } from '../../support/processes.js';

// Stopping PostgreSQL like a machine that lost power, not just like a killed process.
//
// `pg_ctl stop -m immediate` kills every PostgreSQL process, but WAL the WAL writer already
// handed to the kernel with write() survives a process crash (the page cache is not lost), so
// with synchronous_commit=off an immediate stop loses only the unwritten tail of the WAL buffers:
// measured 1 to 3 of ~25 000 acknowledged bare inserts per stop, and usually none at the rate this
// service commits. To make "acknowledged but not on disk" visible, the WAL writer is frozen
// (SIGSTOP) for a moment before the stop, so during that moment the only WAL that reaches the
// kernel is what committing backends flush themselves, which is exactly what synchronous_commit
// decides: with `on` every commit flushes its own WAL before it returns (nothing may be lost), with
// `off` none does (everything acknowledged in that moment is lost, reliably).

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function walWriterPid(pg: PrivatePostgres): number {
  const postmaster = Number(readFileSync(path.join(pg.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const out = execFileSync('pgrep', ['-P', String(postmaster), '-f', 'walwriter'], { encoding: 'utf8' }).trim();
  const pid = Number(out.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no walwriter under postmaster ${postmaster}`);
  return pid;
}

export interface PgCrash {
  /** When the WAL writer was frozen (commits still acknowledged after this may only rely on their own flush). */
  frozenAt: number;
  /** PostgreSQL completely stopped (postmaster gone). */
  downFrom: number;
  /** `start()` called. */
  downTo: number;
}

/**
 * Freezes the WAL writer for `freezeMs` under load, kills it (the postmaster then resets every
 * backend), stops the cluster with `-m immediate`, keeps it down for `downMs` and starts it again.
 * The freeze ends early once `endFreeze()` is true.
 * `onDown` runs once it is completely down and `onUp` right before the start, so the caller can
 * record the window in which no submission may be acknowledged.
 */
export async function crashPostgres(
  pg: PrivatePostgres,
  o: { freezeMs: number; downMs: number; endFreeze?: () => boolean; onDown(at: number): void; onUp(at: number): void },
): Promise<PgCrash> {
  const walwriter = walWriterPid(pg);
  process.kill(walwriter, 'SIGSTOP');
  const frozenAt = Date.now();
  // The freeze ends early when `endFreeze` says so (the load must still be running at the stop).
  while (Date.now() - frozenAt < o.freezeMs && !o.endFreeze?.()) await sleep(10);
  process.kill(walwriter, 'SIGKILL');
  await pg.stopImmediate();
  const downFrom = Date.now();
  o.onDown(downFrom);
  await sleep(o.downMs);
  const downTo = Date.now();
  o.onUp(downTo);
  await pg.start();
  return { frozenAt, downFrom, downTo };
}
