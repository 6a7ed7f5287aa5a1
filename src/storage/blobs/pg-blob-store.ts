import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { BlobTooLargeError } from '../errors.js';
import { FairGate } from '../fair-gate.js';
import { num, sql, type Database, type Sql } from '../database.js';
import { BLOB_LIST_BATCH, SMALL_BLOB_BYTES, type BlobEntry, type BlobStore } from './blob-store.js';

/**
 * Bytes per `blob_chunk` row: large enough that a 35 MiB message is 70 inserts, small enough that
 * a put holds one chunk in memory however large the blob (12 parallel 25 MiB uploads buffered
 * whole took 1.25 GB).
 */
export const BLOB_CHUNK_BYTES = SMALL_BLOB_BYTES;
/** Suffix of the key a listing gives an unfinished write (chunks without a `blob` row). */
const UNFINISHED = '#unfinished';

/**
 * Blobs in PostgreSQL, so API, SMTP and worker replicas share them without a volume. A put streams
 * its bytes as `blob_chunk` rows, each committed on its own (no transaction or pooled connection is
 * held while a slow sender trickles), then writes the `blob` row, which marks the blob complete.
 * Chunks without a `blob` row are an unfinished write; the storage sweeper removes them once old.
 */
export class PgBlobStore implements BlobStore {
  constructor(
    private readonly db: Database,
    /**
     * Chunk reads and writes queue here (runtime.ts: a quarter of DATABASE_POOL_MAX). Without it, 100
     * parallel 4 MiB uploads put 800 chunk inserts in the pool's queue and every other query of the
     * process waited behind them (another tenant's list: 23.6 s p99, test/reliability/tenant-floods).
     */
    private readonly io: FairGate = new FairGate(Number.MAX_SAFE_INTEGER),
  ) {}

  async put(
    key: string,
    source: Readable | Buffer,
    maxBytes = Infinity,
  ): Promise<{ sizeBytes: number; sha256: string }> {
    await this.delete(key); // a retried put starts clean
    const hash = createHash('sha256');
    let size = 0;
    let seq = 0;
    let chunk = Buffer.allocUnsafe(BLOB_CHUNK_BYTES);
    let filled = 0;
    const flush = async () => {
      if (filled === 0) return;
      const data = filled === chunk.length ? chunk : chunk.subarray(0, filled);
      const n = seq++;
      await this.io.run(() =>
        this.db.rows(sql`insert into blob_chunk (key, seq, data) values (${key}, ${n}, ${data})`),
      );
      chunk = Buffer.allocUnsafe(BLOB_CHUNK_BYTES);
      filled = 0;
    };
    try {
      for await (const piece of (Buffer.isBuffer(source) ? [source] : source) as AsyncIterable<Buffer>) {
        size += piece.length;
        // Stop reading at the limit instead of storing an unbounded upload.
        if (size > maxBytes) {
          if (!Buffer.isBuffer(source)) source.destroy();
          throw new BlobTooLargeError(maxBytes);
        }
        hash.update(piece);
        for (let at = 0; at < piece.length;) {
          const n = piece.copy(chunk, filled, at);
          filled += n;
          at += n;
          if (filled === chunk.length) await flush();
        }
      }
      await flush();
      await this.db.rows(
        sql`insert into blob (key, data, size_bytes, created_at) values (${key}, null, ${size}, now())`,
      );
    } catch (err) {
      await this.deleteChunks(key).catch(() => undefined); // else the sweeper does, once old
      throw err;
    }
    return { sizeBytes: size, sha256: hash.digest('hex') };
  }

  /** The chunks and the `blob` row in one statement (one round trip) of the caller's transaction. */
  async putIn(trx: Sql, key: string, data: Buffer): Promise<{ sizeBytes: number }> {
    const chunks: Buffer[] = [];
    for (let at = 0; at < data.length || chunks.length === 0; at += BLOB_CHUNK_BYTES)
      chunks.push(data.subarray(at, at + BLOB_CHUNK_BYTES));
    const rows = sql.join(chunks.map((c, seq) => sql`(${key}, ${seq}, ${c})`));
    await sql`with chunks as (insert into blob_chunk (key, seq, data) values ${rows})
      insert into blob (key, data, size_bytes, created_at) values (${key}, null, ${data.length}, now())`.execute(trx);
    return { sizeBytes: data.length };
  }

  /** One transaction: the chunks change key and shift by one, `head` becomes chunk 0. */
  async prependAndMove(from: string, to: string, head: Buffer): Promise<{ sizeBytes: number }> {
    return this.db.tx(async (trx) => {
      const row = await this.db.one(
        sql<{ data: Uint8Array | null; size_bytes: string | number }>`
          delete from blob where key = ${from} returning data, size_bytes`,
        trx,
      );
      if (!row) throw new Error(`blob ${from} not found`);
      await this.db.rows(sql`delete from blob_chunk where key = ${to}`, trx);
      if (row.data)
        await this.db.rows(sql`insert into blob_chunk (key, seq, data) values (${to}, 1, ${row.data})`, trx);
      else await this.db.rows(sql`update blob_chunk set key = ${to}, seq = seq + 1 where key = ${from}`, trx);
      await this.db.rows(sql`insert into blob_chunk (key, seq, data) values (${to}, 0, ${head})`, trx);
      const sizeBytes = num(row.size_bytes) + head.length;
      await this.db.rows(
        sql`insert into blob (key, data, size_bytes, created_at) values (${to}, null, ${sizeBytes}, now())
          on conflict (key) do update set data = null, size_bytes = excluded.size_bytes`,
        trx,
      );
      return { sizeBytes };
    });
  }

  async get(key: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of await this.stream(key)) parts.push(part as Buffer);
    return Buffer.concat(parts);
  }

  /** Reads one chunk per query, so a reader holds one chunk in memory and no connection between reads. */
  async stream(key: string): Promise<Readable> {
    const row = await this.db.one(sql<{ data: Uint8Array | null }>`select data from blob where key = ${key}`);
    if (!row) throw new Error(`blob ${key} not found`);
    if (row.data) return Readable.from([Buffer.from(row.data)]); // written before chunking
    const { db, io } = this;
    async function* chunks(): AsyncGenerator<Buffer> {
      for (let seq = 0; ; seq++) {
        const c = await io.run(() =>
          db.one(sql<{ data: Uint8Array }>`select data from blob_chunk where key = ${key} and seq = ${seq}`),
        );
        if (!c) return;
        yield Buffer.from(c.data.buffer, c.data.byteOffset, c.data.byteLength);
      }
    }
    return Readable.from(chunks(), { objectMode: false });
  }

  /**
   * The row first: a crash in between leaves chunks without a row, which the sweeper lists. A listed
   * unfinished write (`<key>#unfinished`) loses only chunks still without a row, so a put that
   * completes between the listing and this delete keeps its blob.
   */
  async delete(key: string): Promise<void> {
    if (key.endsWith(UNFINISHED)) {
      const base = key.slice(0, -UNFINISHED.length);
      await this.db.rows(
        sql`delete from blob_chunk where key = ${base} and not exists (select 1 from blob where key = ${base})`,
      );
      return;
    }
    await this.db.rows(sql`delete from blob where key = ${key}`);
    await this.deleteChunks(key);
  }

  private async deleteChunks(key: string): Promise<void> {
    await this.db.rows(sql`delete from blob_chunk where key = ${key}`);
  }

  /**
   * Keyset pages in key order: complete blobs (a `blob` row), then unfinished writes (chunks no
   * `blob` row names, dated by their first chunk).
   */
  async *list(before: Date): AsyncIterable<BlobEntry[]> {
    let after = '';
    for (;;) {
      const rows = await this.db.rows(sql<{ key: string; created_at: string }>`
        select key, created_at from blob where key > ${after} and created_at < ${before} order by key limit ${BLOB_LIST_BATCH}`);
      if (rows.length === 0) break;
      after = rows[rows.length - 1]!.key;
      yield rows.map((r) => ({ key: r.key, writtenAt: new Date(r.created_at), complete: true }));
      if (rows.length < BLOB_LIST_BATCH) break;
    }
    after = '';
    for (;;) {
      const rows = await this.db.rows(sql<{ key: string; created_at: string }>`
        select c.key, min(c.created_at) as created_at from blob_chunk c
        where c.key > ${after} and not exists (select 1 from blob b where b.key = c.key)
        group by c.key having min(c.created_at) < ${before} order by c.key limit ${BLOB_LIST_BATCH}`);
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!.key;
      yield rows.map((r) => ({ key: r.key + UNFINISHED, writtenAt: new Date(r.created_at), complete: false }));
      if (rows.length < BLOB_LIST_BATCH) return;
    }
  }
}
