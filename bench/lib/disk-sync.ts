import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { percentile } from './measure.js';

/**
 * How fast this disk makes a write durable: `count` 4 KiB writes, each followed by fdatasync
 * (what PostgreSQL's WAL flush and Postfix's queue file fsync wait for), in a folder beside
 * `near` (a path on the disk that matters, e.g. PostgreSQL's data directory). SMTP figures that
 * wait for a durable commit are only comparable between runs on disks of the same kind, so the
 * bench prints this beside them.
 */
export function diskSyncLatency(near: string, count = 200): { p50Ms: number; p99Ms: number; where: string } {
  const dir = mkdtempSync(path.join(near, 'mbx-fsync-'));
  const file = path.join(dir, 'probe');
  const fd = openSync(file, 'w');
  const block = Buffer.alloc(4096, 1);
  const times: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const t = process.hrtime.bigint();
      writeSync(fd, block, 0, block.length, i * block.length);
      fdatasyncSync(fd);
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  return { p50Ms: round(percentile(times, 50)), p99Ms: round(percentile(times, 99)), where: near };
}

const round = (ms: number) => Number(ms.toFixed(3));

/** The folder above PostgreSQL's data directory (same disk), or the temporary folder when it cannot be read. */
export async function postgresDisk(databaseUrl: string): Promise<string> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: databaseUrl });
  try {
    await client.connect();
    const dir = (await client.query<{ data_directory: string }>('show data_directory')).rows[0]!.data_directory;
    return path.dirname(dir);
  } catch {
    return (await import('node:os')).tmpdir();
  } finally {
    await client.end().catch(() => undefined);
  }
}
