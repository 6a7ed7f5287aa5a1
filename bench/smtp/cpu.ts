import { readFileSync, readdirSync } from 'node:fs';

// CPU time is what this machine is short of: on a loaded 2-core box msg/s swings with the other
// tenants, while CPU milliseconds per message (ours and PostgreSQL's) stay comparable between runs.
const TICK_MS = 10; // USER_HZ is 100 on Linux

/** utime + stime of a process in ms, or 0 once it is gone. */
function cpuOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** [utime + stime, cutime + cstime (its children it reaped), parent pid] of every process, in ms. */
function processTable(): Map<number, { own: number; reaped: number; ppid: number }> {
  const table = new Map<number, { own: number; reaped: number; ppid: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ');
      table.set(Number(entry), {
        ppid: Number(fields[1]),
        own: (Number(fields[11]) + Number(fields[12])) * TICK_MS,
        reaped: (Number(fields[13]) + Number(fields[14])) * TICK_MS,
      });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

/**
 * The CPU of `root` and everything below it (Postfix's master and the daemons it starts), in ms:
 * each live process's own time plus what it reaped of children that exited, so a daemon that
 * exits between two readings moves its time into its parent's count instead of losing it.
 */
function treeCpu(root: number): number {
  const table = processTable();
  const inTree = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 32; hops++) {
      if (p === root) return true;
      p = table.get(p)?.ppid ?? 0;
    }
    return false;
  };
  let ms = 0;
  for (const [pid, t] of table) if (inTree(pid)) ms += t.own + t.reaped;
  return ms;
}

/** Starts counting the CPU of the process tree under `root`; `stop` returns ms used since. */
export function treeCpuMeter(root: number): () => number {
  const start = treeCpu(root);
  return () => treeCpu(root) - start;
}

/** Every PostgreSQL backend serving `database` (its process title names the database). */
function backendsOf(database: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (title.startsWith('postgres: ') && title.includes(` ${database} `)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Starts counting the CPU of `pid` and of the backends of `database`; `stop` returns ms used since. */
export function cpuMeter(pid: number, database: string): () => { server: number; postgres: number } {
  const server0 = cpuOf(pid);
  const pg0 = new Map(backendsOf(database).map((p) => [p, cpuOf(p)]));
  return () => {
    let postgres = 0;
    for (const p of backendsOf(database)) postgres += cpuOf(p) - (pg0.get(p) ?? 0);
    return { server: cpuOf(pid) - server0, postgres };
  };
}
