import { readdirSync, readFileSync } from 'node:fs';

// What the benchmarks and the soak read about processes from Linux /proc.

const TICKS_PER_SECOND = 100; // USER_HZ (getconf CLK_TCK) on Linux

/** CPU seconds (user + system) a process has used so far; NaN once it is gone. */
export function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/** Resident set size in MB (VmRSS of /proc/<pid>/status); NaN once the process is gone. */
export function rssMb(pid: number | undefined): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** This process's soft limit on open files (RLIMIT_NOFILE, /proc/self/limits); children inherit it. */
export function openFilesLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return !m || m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

/** Busy and total jiffies of the whole machine (first line of /proc/stat): context for the CPU figures. */
export function machineJiffies(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - (f[4] ?? 0), total };
}

/**
 * CPU seconds by pid of the PostgreSQL processes working for `database` (backends and autovacuum
 * workers show the database name in their process title).
 */
export function postgresCpuSeconds(database: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let title: string;
    try {
      title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (title.startsWith('postgres:') && title.includes(` ${database} `)) {
      const s = cpuSeconds(Number(entry));
      if (!Number.isNaN(s)) out.set(Number(entry), s);
    }
  }
  return out;
}

/** CPU used between two reads of postgresCpuSeconds: backends started since count whole, those that exited are lost. */
export function cpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, s] of after) sum += s - (before.get(pid) ?? 0);
  return sum;
}
