import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseMigratedTo } from './migration-support.js';

// Migration20270125000000StorageQuota on a database that already holds mail: every message's
// stored_bytes is backfilled from its bodies and attachments (not the raw blob), and every
// mailbox's storage_used_bytes is the sum over its live messages (docs/api.md, "Storage quota").

let db: Awaited<ReturnType<typeof databaseMigratedTo>> | undefined;
const q = () => db!.q();

beforeAll(async () => {
  db = await databaseMigratedTo('Migration20270120000000BlobChunks');
  const k = q();
  const now = new Date();
  await sql`insert into domain (id, name, created_at) values ('dom_1', 'a.test', ${now})`.execute(k);
  for (const box of ['box_1', 'box_2'])
    await sql`insert into mailbox (id, domain_id, address, local_part, created_at)
      values (${box}, 'dom_1', ${`${box}@a.test`}, ${box}, ${now})`.execute(k);
  const message = (id: string, box: string, text: string | null, html: string | null, deleted: boolean) =>
    sql`insert into thread (id, mailbox_id, created_at, last_message_at) values (${`thr_${id}`}, ${box}, ${now}, ${now})`
      .execute(k)
      .then(() =>
        sql`insert into message (id, mailbox_id, thread_id, direction, from_address, to_addresses, cc_addresses,
            bcc_addresses, mailbox_address, body_format, references_header, created_at, body_text, body_html, deleted_at)
          values (${id}, ${box}, ${`thr_${id}`}, 'inbound', 'x@remote.test', ${['y@a.test']}, ${[]}, ${[]},
            ${`${box}@a.test`}, 'text', ${[]}, ${now}, ${text}, ${html}, ${deleted ? now : null})`.execute(k),
      );
  await message('msg_1', 'box_1', 'héllo', '<p>héllo</p>', false); // 6 + 13 bytes (UTF-8)
  await message('msg_2', 'box_1', 'abc', null, false);
  await message('msg_3', 'box_1', 'gone', null, true); // deleted: counted on the message, not the mailbox
  await message('msg_4', 'box_2', null, null, false);
  const attachment = (id: string, messageId: string | null, size: number) =>
    sql`insert into attachment (id, mailbox_id, message_id, filename, content_type, size_bytes, sha256, blob_key, created_at)
      values (${id}, 'box_1', ${messageId}, 'f.bin', 'application/octet-stream', ${size}, 'x', ${`att/${id}`}, ${now})`.execute(
      k,
    );
  await attachment('att_1', 'msg_1', 1000);
  await attachment('att_2', 'msg_1', 24);
  await attachment('att_3', null, 5000); // an unclaimed upload belongs to no message
  await db.migrateRest();
}, 120_000);

afterAll(async () => {
  await db?.close();
});

describe('storage quota migration backfill', () => {
  it('sets stored_bytes from bodies and attachments, storage_used_bytes from live messages', async () => {
    const messages = await sql<{
      id: string;
      stored_bytes: string;
    }>`select id, stored_bytes from message order by id`.execute(q());
    expect(messages.rows.map((r) => [r.id, Number(r.stored_bytes)])).toEqual([
      ['msg_1', 6 + 13 + 1000 + 24],
      ['msg_2', 3],
      ['msg_3', 4],
      ['msg_4', 0],
    ]);
    const boxes = await sql<{ id: string; storage_used_bytes: string; storage_quota_bytes: string | null }>`
      select id, storage_used_bytes, storage_quota_bytes from mailbox order by id`.execute(q());
    expect(boxes.rows.map((r) => [r.id, Number(r.storage_used_bytes), r.storage_quota_bytes])).toEqual([
      ['box_1', 6 + 13 + 1000 + 24 + 3, null],
      ['box_2', 0, null],
    ]);
  });
});
