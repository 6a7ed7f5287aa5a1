import pg from 'pg';
import { ADMIN_URL } from '../lib/scratch.js';

/** Shares of the sampled backend time, in %: what a drain's PostgreSQL backends were doing. */
export interface BackendStates {
  samples: number;
  /** Running a statement (on a core or waiting for one). */
  active: number;
  /** Waiting for a row or transaction lock another transaction holds (`Lock`). */
  lock: number;
  /** Waiting for the WAL flush of a COMMIT or for I/O (`IO`, `LWLock:WALWrite`). */
  io: number;
  /** Inside a transaction, waiting for the worker's next statement (the worker's JS, or its core). */
  idleInTransaction: number;
  /** Between transactions. */
  idle: number;
}

/**
 * Samples the client backends of `database` every `everyMs` from pg_stat_activity until stopped:
 * the share of backend time spent waiting on locks says whether a drain's transactions serialise
 * on shared rows (a mailbox's counters) rather than on the machine's cores. One connection, a
 * statement a sample, to the maintenance database: its backend's CPU is not counted as the
 * measured database's (cpu.ts counts that database's backends).
 */
export async function sampleBackendStates(database: string, everyMs = 20): Promise<() => Promise<BackendStates>> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  const counts = { samples: 0, active: 0, lock: 0, io: 0, idleInTransaction: 0, idle: 0 };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const { rows } = await client.query<{ state: string | null; wait: string | null; event: string | null }>(
        `select state, wait_event_type as wait, wait_event as event from pg_stat_activity
          where datname = $1 and backend_type = 'client backend'`,
        [database],
      );
      for (const r of rows) {
        counts.samples++;
        if (r.wait === 'Lock') counts.lock++;
        else if (r.wait === 'IO' || r.event === 'WALWrite') counts.io++;
        else if (r.state === 'idle in transaction') counts.idleInTransaction++;
        else if (r.state === 'active') counts.active++;
        else counts.idle++;
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    await client.end();
    const share = (n: number) => Math.round((1000 * n) / Math.max(1, counts.samples)) / 10;
    return {
      samples: counts.samples,
      active: share(counts.active),
      lock: share(counts.lock),
      io: share(counts.io),
      idleInTransaction: share(counts.idleInTransaction),
      idle: share(counts.idle),
    };
  };
}
