import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
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

// One writer of newFileSyncRate, in a thread of its own: new files until the deadline.
const NEW_FILE_WRITER = `
const { workerData, parentPort } = require('node:worker_threads');
const { openSync, writeSync, fsyncSync, closeSync, unlinkSync } = require('node:fs');
const block = Buffer.alloc(workerData.bytes, 1);
const times = [];
for (let i = 0; Date.now() < workerData.until; i++) {
  const file = workerData.dir + '/w' + workerData.id + '-' + i;
  const t = process.hrtime.bigint();
  const fd = openSync(file, 'wx');
  writeSync(fd, block);
  fsyncSync(fd);
  closeSync(fd);
  times.push(Number(process.hrtime.bigint() - t) / 1e6);
  if (i >= 16) unlinkSync(workerData.dir + '/w' + workerData.id + '-' + (i - 16));
}
parentPort.postMessage(times);
`;

/**
 * What Postfix's queue asks of the disk, unlike PostgreSQL's WAL: every message a new file
 * (create, write 10 KiB, fsync: the file and the journal's record of its creation), from
 * `writers` processes at once (its smtpd/cleanup pairs); threads of this process stand in for
 * them. Beside Postfix's queue rate it says whether the disk is what bounds Postfix: on the
 * machines measured so far it made 3-4.5x more such files durable than Postfix queued, and
 * Postfix was bound by its CPU instead (bench/smtp prints that too).
 */
export async function newFileSyncRate(
  near: string,
  writers = 8,
  seconds = 2,
): Promise<{ filesPerSecond: number; p50Ms: number; p99Ms: number; writers: number }> {
  const dir = mkdtempSync(path.join(near, 'mbx-newfiles-'));
  const until = Date.now() + seconds * 1000;
  try {
    const runs = await Promise.all(
      Array.from(
        { length: writers },
        (_, id) =>
          new Promise<number[]>((resolve, reject) => {
            const worker = new Worker(NEW_FILE_WRITER, {
              eval: true,
              workerData: { dir, id, until, bytes: 10 * 1024 },
            });
            worker.once('message', resolve);
            worker.once('error', reject);
          }),
      ),
    );
    const times = runs.flat().sort((a, b) => a - b);
    return {
      filesPerSecond: Math.round(times.length / seconds),
      p50Ms: round(percentile(times, 50)),
      p99Ms: round(percentile(times, 99)),
      writers,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

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
