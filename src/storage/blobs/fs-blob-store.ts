import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, open } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../core/errors.js';
import type { BlobStore } from './blob-store.js';

/** Blobs as files under `<data dir>/blobs`, written to a temp name, fsynced, then renamed. */
export class FsBlobStore implements BlobStore {
  constructor(private readonly root: string) {}

  private file(key: string): string {
    if (!/^[a-z]+\/[A-Za-z0-9_-]+$/.test(key)) throw new Error(`bad blob key ${key}`);
    return path.join(this.root, key);
  }

  async put(key: string, source: Readable | Buffer, maxBytes = Infinity): Promise<{ sizeBytes: number; sha256: string }> {
    const target = this.file(key);
    await mkdir(path.dirname(target), { recursive: true });
    const temp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    const hash = createHash('sha256');
    let size = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > maxBytes) return done(new AppError('PAYLOAD_TOO_LARGE'));
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
    return { sizeBytes: size, sha256: hash.digest('hex') };
  }

  get(key: string): Promise<Buffer> {
    return readFile(this.file(key));
  }

  async stream(key: string): Promise<Readable> {
    return createReadStream(this.file(key));
  }

  async delete(key: string): Promise<void> {
    await rm(this.file(key), { force: true });
  }
}
