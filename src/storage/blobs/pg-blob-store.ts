import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { AppError } from '../../core/errors.js';
import { sql, type Database } from '../database.js';
import { BLOB_LIST_BATCH, type BlobEntry, type BlobStore } from './blob-store.js';

/** Blobs in the `blob` table, so API, SMTP and worker replicas share them without a volume. */
export class PgBlobStore implements BlobStore {
  constructor(private readonly db: Database) {}

  async put(
    key: string,
    source: Readable | Buffer,
    maxBytes = Infinity,
  ): Promise<{ sizeBytes: number; sha256: string }> {
    const chunks: Buffer[] = [];
    let size = 0;
    if (Buffer.isBuffer(source)) {
      chunks.push(source);
      size = source.length;
    } else {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        size += chunk.length;
        // Stop reading at the limit instead of buffering an unbounded upload.
        if (size > maxBytes) {
          source.destroy();
          throw new AppError('PAYLOAD_TOO_LARGE');
        }
        chunks.push(chunk);
      }
    }
    if (size > maxBytes) throw new AppError('PAYLOAD_TOO_LARGE');
    const data = Buffer.concat(chunks);
    await this.db.rows(sql`insert into blob (key, data, size_bytes, created_at) values (${key}, ${data}, ${size}, now())
      on conflict (key) do update set data = excluded.data, size_bytes = excluded.size_bytes`);
    return { sizeBytes: size, sha256: createHash('sha256').update(data).digest('hex') };
  }

  async get(key: string): Promise<Buffer> {
    const row = await this.db.one(sql<{ data: Uint8Array }>`select data from blob where key = ${key}`);
    if (!row) throw new Error(`blob ${key} not found`);
    return Buffer.from(row.data);
  }

  async stream(key: string): Promise<Readable> {
    return Readable.from([await this.get(key)]);
  }

  async delete(key: string): Promise<void> {
    await this.db.rows(sql`delete from blob where key = ${key}`);
  }

  /** Keyset pages in key order; a put is one INSERT, so every row is complete. */
  async *list(before: Date): AsyncIterable<BlobEntry[]> {
    let after = '';
    for (;;) {
      const rows = await this.db.rows(sql<{ key: string; created_at: string }>`
        select key, created_at from blob where key > ${after} and created_at < ${before} order by key limit ${BLOB_LIST_BATCH}`);
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!.key;
      yield rows.map((r) => ({ key: r.key, writtenAt: new Date(r.created_at), complete: true }));
      if (rows.length < BLOB_LIST_BATCH) return;
    }
  }
}
