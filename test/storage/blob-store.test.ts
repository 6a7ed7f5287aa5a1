import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/harness.js';
import { rowsOf, waitFor } from '../delivery/helpers.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';
import { FsBlobStore } from '../../src/storage/blobs/fs-blob-store.js';
import { BLOB_CHUNK_BYTES, PgBlobStore } from '../../src/storage/blobs/pg-blob-store.js';
import { FairGate } from '../../src/storage/fair-gate.js';
import type { BlobStore } from '../../src/storage/blobs/blob-store.js';
import { BlobTooLargeError } from '../../src/storage/errors.js';
import { toAppError } from '../../src/core/base/error-mapping.js';

// Both blob stores (src/storage/blobs) on this project's engine: bytes round-trip across chunk
// boundaries, a put streams (memory independent of the blob's size), BlobTooLargeError leaves
// nothing behind, prependAndMove, and an unfinished PostgreSQL write is listed as incomplete.

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** `total` bytes in `piece`-byte pieces, generated as read (the source itself holds one piece). */
const source = (total: number, piece = 64 * 1024): Readable =>
  Readable.from(
    (function* () {
      for (let at = 0; at < total; at += piece) yield Buffer.alloc(Math.min(piece, total - at), at % 251);
    })(),
  );
const key = () => `att/${newId(ID_PREFIX.attachment)}`;
const collect = async (r: Readable) => {
  const parts: Buffer[] = [];
  for await (const p of r) parts.push(p as Buffer);
  return Buffer.concat(parts);
};

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

describe.each(['postgres', 'fs'] as const)('%s blob store', (kind) => {
  const store = (): BlobStore =>
    kind === 'postgres'
      ? new PgBlobStore(server.runtime.services.db)
      : new FsBlobStore(path.join(server.dataDir, 'blob-store-test'));

  it('round-trips bytes across chunk boundaries, by get and by stream, with size and sha256', async () => {
    for (const size of [0, 1, BLOB_CHUNK_BYTES - 1, BLOB_CHUNK_BYTES, BLOB_CHUNK_BYTES + 1, 3 * BLOB_CHUNK_BYTES + 7]) {
      const data = randomBytes(size);
      const k = key();
      // Pieces of an odd size, so chunk boundaries fall inside them.
      const pieces = Readable.from(
        Array.from({ length: Math.ceil(size / 100_003) }, (_, i) => data.subarray(i * 100_003, (i + 1) * 100_003)),
      );
      expect(await store().put(k, pieces)).toEqual({ sizeBytes: size, sha256: sha(data) });
      expect((await store().get(k)).equals(data), `get ${size}`).toBe(true);
      expect((await collect(await store().stream(k))).equals(data), `stream ${size}`).toBe(true);
      await store().delete(k);
      await expect(store().get(k)).rejects.toThrow();
    }
  });

  it('streams a put: half-way through the source, what was read is already in the store', async () => {
    const k = key();
    const total = 8 * MiB;
    const storedSoFar = async (): Promise<number> => {
      if (kind === 'postgres')
        return Number(
          (await rowsOf(() => server)`select coalesce(sum(length(data)), 0) as n from blob_chunk where key = ${k}`)[0]
            .n,
        );
      const dir = path.join(server.dataDir, 'blob-store-test', 'att');
      const temp = readdirSync(dir).find((f) => f.startsWith(`${k.slice(4)}.`) && f.endsWith('.tmp'));
      return temp ? statSync(path.join(dir, temp)).size : 0;
    };
    let atHalf = -1;
    const piece = 64 * 1024;
    async function* pieces() {
      for (let at = 0; at < total; at += piece) {
        if (at === total / 2) {
          await new Promise((r) => setTimeout(r, 200)); // let the store catch up with what it was given
          atHalf = await storedSoFar();
        }
        yield Buffer.alloc(piece, at % 251);
      }
    }
    expect((await store().put(k, Readable.from(pieces()))).sizeBytes).toBe(total);
    // A whole-file store holds everything until the end (0 stored at half-way); a streaming one
    // is at most a chunk and the stream buffers behind.
    expect(atHalf).toBeGreaterThanOrEqual(total / 2 - BLOB_CHUNK_BYTES - 64 * 1024);
    await store().delete(k);
  });

  it('refuses past maxBytes with BlobTooLargeError (PAYLOAD_TOO_LARGE in the core) and leaves nothing behind', async () => {
    const k = key();
    const refused = store().put(k, source(3 * BLOB_CHUNK_BYTES), 2 * BLOB_CHUNK_BYTES + 10);
    await expect(refused).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(toAppError(await refused.catch((e: unknown) => e)).code).toBe('PAYLOAD_TOO_LARGE');
    await expect(store().get(k)).rejects.toThrow();
    if (kind === 'postgres') {
      expect(await rowsOf(() => server)`select seq from blob_chunk where key = ${k}`).toEqual([]);
    }
    const listed: string[] = [];
    for await (const batch of store().list(new Date(Date.now() + 60_000))) listed.push(...batch.map((e) => e.key));
    expect(listed.filter((l) => l.startsWith(k))).toEqual([]);
  });

  it('prependAndMove puts the head in front and removes the source', async () => {
    const from = `raw/${newId(ID_PREFIX.message)}-arriving`;
    const to = `raw/${newId(ID_PREFIX.message)}`;
    const body = randomBytes(2 * BLOB_CHUNK_BYTES + 5);
    await store().put(from, body);
    const head = Buffer.from('Received: from test\r\n');
    expect(await store().prependAndMove(from, to, head)).toEqual({ sizeBytes: head.length + body.length });
    expect((await store().get(to)).equals(Buffer.concat([head, body]))).toBe(true);
    await expect(store().get(from)).rejects.toThrow();
    await store().delete(to);
  });

  it("putIn stores a blob with the caller's transaction: there after the commit; on PostgreSQL gone with a rollback", async () => {
    const db = server.runtime.services.db;
    for (const size of [0, 10 * 1024, BLOB_CHUNK_BYTES + 3]) {
      const data = randomBytes(size);
      const kept = key();
      expect(await db.tx((trx) => store().putIn(trx, kept, data))).toEqual({ sizeBytes: size });
      expect((await store().get(kept)).equals(data), `putIn ${size}`).toBe(true);
      await store().delete(kept);
    }
    const rolledBack = key();
    await expect(
      db.tx(async (trx) => {
        await store().putIn(trx, rolledBack, randomBytes(100));
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    if (kind === 'postgres') await expect(store().get(rolledBack)).rejects.toThrow();
    await store().delete(rolledBack);
  });
});

describe('postgres blob store: unfinished writes', () => {
  it('lists chunks without a blob row as incomplete; deleting that entry spares a put that completed meanwhile', async () => {
    const store = new PgBlobStore(server.runtime.services.db);
    const q = rowsOf(() => server);
    const killed = key();
    const finishing = key();
    for (const k of [killed, finishing])
      await q`insert into blob_chunk (key, seq, data) values (${k}, 0, ${Buffer.from('half')})`;
    const incomplete: string[] = [];
    for await (const batch of store.list(new Date(Date.now() + 60_000)))
      incomplete.push(...batch.filter((e) => !e.complete).map((e) => e.key));
    const entries = [killed, finishing].map((k) => incomplete.find((i) => i.startsWith(k)));
    expect(entries.every(Boolean)).toBe(true);
    // `finishing` completes between the listing and the sweeper's delete.
    await q`insert into blob (key, data, size_bytes, created_at) values (${finishing}, null, 4, now())`;
    for (const e of entries) await store.delete(e!);
    expect(await q`select key from blob_chunk where key in (${killed}, ${finishing})`).toEqual([{ key: finishing }]);
    expect((await store.get(finishing)).toString()).toBe('half');
    await store.delete(finishing);
  });
});

describe('postgres blob store: chunk I/O gate', () => {
  it('chunk writes and reads wait at the gate, never in the pool: other queries pass while it is full', async () => {
    const gate = new FairGate(1);
    const store = new PgBlobStore(server.runtime.services.db, gate);
    const q = rowsOf(() => server);
    const k = key();
    let free!: () => void;
    const held = gate.run(() => new Promise<void>((r) => (free = r)));
    const put = store.put(k, source(2 * BLOB_CHUNK_BYTES));
    await waitFor(async () => gate.load.waiting === 1, 10_000, 'the put at the gate');
    // Another query of the process is answered while the put waits for the gate.
    expect(await q`select 1 as one`).toEqual([{ one: 1 }]);
    expect(await q`select count(*)::int as n from blob_chunk where key = ${k}`).toEqual([{ n: 0 }]);
    free();
    await held;
    expect((await put).sizeBytes).toBe(2 * BLOB_CHUNK_BYTES);
    expect((await store.get(k)).length).toBe(2 * BLOB_CHUNK_BYTES);
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
    await store.delete(k);
  });
});
