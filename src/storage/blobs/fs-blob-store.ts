import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, open, opendir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BlobTooLargeError } from '../errors.js';
import { BLOB_LIST_BATCH, type BlobEntry, type BlobStore } from './blob-store.js';
import type { Sql } from '../database.js';

const KEY = /^[a-z]+\/[A-Za-z0-9_-]+$/;
/** `<key>.<12 hex>.tmp`: a put in progress, or the leftover of one a crash interrupted. */
const TEMP = /^[a-z]+\/[A-Za-z0-9_-]+\.[0-9a-f]{12}\.tmp$/;

/** Blobs as files under `<data dir>/blobs`, written to a temp name, fsynced, renamed, directory fsynced. */
export class FsBlobStore implements BlobStore {
  constructor(private readonly root: string) {}

  private file(key: string, allowTemp = false): string {
    if (!KEY.test(key) && !(allowTemp && TEMP.test(key))) throw new Error(`bad blob key ${key}`);
    return path.join(this.root, key);
  }

  async put(
    key: string,
    source: Readable | Buffer,
    maxBytes = Infinity,
  ): Promise<{ sizeBytes: number; sha256: string }> {
    const target = this.file(key);
    await mkdir(path.dirname(target), { recursive: true });
    const temp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    const hash = createHash('sha256');
    let size = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > maxBytes) return done(new BlobTooLargeError(maxBytes));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(Buffer.isBuffer(source) ? Readable.from([source]) : source, meter, createWriteStream(temp));
      const handle = await open(temp, 'r');
      await handle.sync();
      await handle.close();
      await rename(temp, target);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    // The rename is durable only once its directory is: without this a power loss could leave a
    // committed row naming a file that is not there (POSIX fsync(2); what Postfix does for its queue).
    const dir = await open(path.dirname(target), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    return { sizeBytes: size, sha256: hash.digest('hex') };
  }

  /** A file cannot join a database transaction: written and fsynced now, before the caller commits. */
  async putIn(_trx: Sql, key: string, data: Buffer): Promise<{ sizeBytes: number }> {
    const { sizeBytes } = await this.put(key, data);
    return { sizeBytes };
  }

  /** Writes `to` like a put (temp file, fsync, rename) from `head` and the file of `from`, then removes `from`. */
  async prependAndMove(from: string, to: string, head: Buffer): Promise<{ sizeBytes: number }> {
    const source = createReadStream(this.file(from));
    const { sizeBytes } = await this.put(to, Readable.from(withHead(head, source)));
    await rm(this.file(from), { force: true });
    return { sizeBytes };
  }

  get(key: string): Promise<Buffer> {
    return readFile(this.file(key));
  }

  async stream(key: string): Promise<Readable> {
    return createReadStream(this.file(key));
  }

  /** Also removes a stale temp file a listing reported (`complete: false`). */
  async delete(key: string): Promise<void> {
    await rm(this.file(key, true), { force: true });
  }

  async *list(before: Date): AsyncIterable<BlobEntry[]> {
    const prefixes = await readdir(this.root, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    let batch: BlobEntry[] = [];
    for (const prefix of prefixes) {
      if (!prefix.isDirectory() || !/^[a-z]+$/.test(prefix.name)) continue;
      for await (const entry of await opendir(path.join(this.root, prefix.name))) {
        const key = `${prefix.name}/${entry.name}`;
        const complete = KEY.test(key);
        // Anything else in the tree is not ours to judge.
        if (!entry.isFile() || (!complete && !TEMP.test(key))) continue;
        const info = await stat(path.join(this.root, key)).catch(() => null);
        if (!info || info.mtime >= before) continue;
        batch.push({ key, writtenAt: info.mtime, complete });
        if (batch.length >= BLOB_LIST_BATCH) {
          yield batch;
          batch = [];
        }
      }
    }
    if (batch.length) yield batch;
  }
}

async function* withHead(head: Buffer, rest: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  yield head;
  yield* rest;
}
