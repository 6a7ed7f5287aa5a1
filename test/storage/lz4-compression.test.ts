import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/storage/database.js';
import { ENGINE, startTestServer, type TestServer } from '../support/harness.js';
import { seedMessage, twoTenants, type Tenants } from '../support/seed-messages.js';

// Large values are written lz4-compressed where the server has lz4 (PostgreSQL), and stay pglz
// where it does not (PGlite), migration 20270215000000-lz4-compression.ts; either way they read
// back byte for byte.

let server: TestServer;
let t: Tenants;
beforeAll(async () => {
  server = await startTestServer();
  t = await twoTenants(server);
});
afterAll(async () => {
  await server?.close();
});

const LARGE = [
  'message.body_text',
  'message.body_html',
  'message.search_vector',
  'message.extracted',
  'blob.data',
  'blob_chunk.data',
  'attachment_text.text',
];

describe('compression of large values', () => {
  it('sets lz4 on every large column where the server has it', async () => {
    const rows = await server.runtime.services.db.rows(
      sql<{
        col: string;
        compression: string;
      }>`select c.relname || '.' || a.attname as col, a.attcompression::text as compression
        from pg_attribute a join pg_class c on c.oid = a.attrelid
        where c.relkind = 'r' and c.relname || '.' || a.attname = any(${LARGE}::text[])`,
    );
    expect(rows.map((r) => r.col).sort()).toEqual([...LARGE].sort());
    // '' is the server's default_toast_compression (pglz unless configured).
    for (const r of rows) expect(r.compression).toBe(ENGINE === 'postgres' ? 'l' : '');
  });

  it('stores a large body compressed with it and reads it back whole', async () => {
    const line = 'The quick brown fox jumps over the lazy dog; the payload of a long body.\r\n';
    const bodyText = `${line.repeat(300)}end ${'x'.repeat(10)}`;
    const m = await seedMessage(server, { mailboxId: t.a1.mailboxId, subject: 'Long', bodyText });
    const [stored] = await server.runtime.services.db.rows(
      sql<{
        method: string | null;
      }>`select pg_column_compression(body_text) as method from message where id = ${m.messageId}`,
    );
    expect(stored?.method).toBe(ENGINE === 'postgres' ? 'lz4' : 'pglz');
    const res = await server.api(t.a1.token).get(`/api/messages/${m.messageId}`);
    expect(res.status).toBe(200);
    expect((res.body as { data: { bodyText: string } }).data.bodyText).toBe(bodyText);
  });
});
