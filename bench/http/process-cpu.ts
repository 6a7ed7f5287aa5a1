import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

// CPU time of processes, from /proc (Linux): a row's CPU per request on the serving process and
// on PostgreSQL's backends is steadier on a loaded machine than its rate, and says which side
// a gap is on. Elsewhere the figures are NaN.

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100;

/** utime + stime of `pid` in ms; NaN when it cannot be read. */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), counted from its closing paren.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/**
 * utime + stime of each thread of `pid` in ms, summed by thread name (/proc/<pid>/task/<tid>/comm):
 * the main thread is `main`; V8's GC and compiler helpers and libuv's pool run beside it.
 */
export function threadCpuMsOf(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = Number(tid) === pid ? 'main' : readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
      byName.set(name, (byName.get(name) ?? 0) + ms);
    } catch {
      // the thread ended meanwhile
    }
  }
  return byName;
}

/** The PostgreSQL backends serving `database` now (their pids). */
export async function backendsOf(adminUrl: string, database: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const r = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [database]);
    return r.rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}
