import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';

/** What a lock file says about its holder. */
export interface LockHolder {
  pid: number;
  command: string;
  host: string;
  startedAtTs: number;
  /** MAILBOX_RESOURCES_DIR of the holder, when it watches one (apply's hint). */
  resourcesDir: string | null;
}

/** Another live process holds the embedded database. The message is the one line the CLI prints. */
export class DataDirLockedError extends Error {
  constructor(
    message: string,
    readonly holder: LockHolder,
  ) {
    super(message);
    this.name = 'DataDirLockedError';
  }
}

/**
 * One process at a time on an embedded (PGlite) data directory: PGlite is a single-process
 * PostgreSQL, and two writers on one cluster corrupt it. The lock is `<dir>.lock`, created with
 * O_EXCL (`wx`) and holding the holder's pid and command; a lock whose pid is gone (kill -9, a
 * crash) on this host is stale and taken over. Returns the release function (also run on exit).
 */
export function lockDataDir(dir: string, me: Omit<LockHolder, 'pid' | 'host' | 'startedAtTs'>): () => void {
  const file = `${dir}.lock`;
  const mine: LockHolder = { ...me, pid: process.pid, host: hostname(), startedAtTs: Date.now() };
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, JSON.stringify(mine) + '\n');
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw err;
      const holder = readHolder(file);
      if (holder && isAlive(holder)) throw lockedError(dir, holder, me.command);
      // Stale (or unreadable, half-written by a crash): take it over.
      try {
        unlinkSync(file);
      } catch {
        /* another process took it over first; the next openSync decides */
      }
    }
  }
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off('exit', release);
    try {
      if (readHolder(file)?.pid === process.pid) unlinkSync(file);
    } catch {
      /* already gone */
    }
  };
  process.on('exit', release);
  return release;
}

function readHolder(file: string): LockHolder | null {
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as LockHolder;
    return Number.isInteger(value.pid) ? value : null;
  } catch {
    return null;
  }
}

/** signal 0 probes a pid (kill(2)); EPERM means it exists under another user. Other hosts: assume alive. */
function isAlive(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
    return !isZombie(holder.pid);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function lockedError(dir: string, holder: LockHolder, command: string): DataDirLockedError {
  const who = `pid ${holder.pid} (mailbox ${holder.command}, since ${new Date(holder.startedAtTs).toISOString()})`;
  if (command === 'apply' && holder.command === 'serve') {
    const where = holder.resourcesDir
      ? `drop the file into MAILBOX_RESOURCES_DIR (${holder.resourcesDir}) instead; the running server applies it at once`
      : 'restart it with MAILBOX_RESOURCES_DIR set and drop the file there instead; the running server applies it at once';
    return new DataDirLockedError(`the embedded server ${who} holds ${dir}: ${where}`, holder);
  }
  return new DataDirLockedError(`the embedded database ${dir} is in use by ${who}; stop it first`, holder);
}

/** A killed process its parent has not reaped yet still answers signal 0; Linux shows it as state Z. */
function isZombie(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
