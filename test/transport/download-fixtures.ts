import type { TestServer } from '../support/harness.js';
import { seedMessage } from '../support/tenants.js';
import { insertAttachment } from '../../src/core/state/attachments/attachment.store.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';
import { sql } from '../../src/storage/database.js';

/** A seeded inbound message with a raw source and one attachment in the blob store. */
export async function seedMessageWithRaw(
  server: TestServer,
  mailbox: { mailboxId: string; address: string },
  o: { filename?: string; content?: string } = {},
) {
  const services = server.runtime.services;
  const seeded = await seedMessage(server, mailbox);
  const rawKey = `raw/${newId(ID_PREFIX.message)}`;
  const attKey = `att/${newId(ID_PREFIX.attachment)}`;
  const raw = `From: sender@remote.example\r\nTo: ${mailbox.address}\r\nSubject: Seeded\r\n\r\nHello\r\n`;
  await services.blobs.put(rawKey, Buffer.from(raw));
  const content = Buffer.from(o.content ?? 'attachment bytes');
  const stored = await services.blobs.put(attKey, content);
  const attachmentId = await services.db.tx(async (trx) => {
    await sql`update message set raw_blob_key = ${rawKey}, attachment_count = 1 where id = ${seeded.messageId}`.execute(
      trx,
    );
    return insertAttachment(trx, {
      filename: o.filename ?? 'notes.txt',
      contentType: 'text/plain',
      sizeBytes: stored.sizeBytes,
      sha256: stored.sha256,
      blobKey: attKey,
      mailboxId: mailbox.mailboxId,
      messageId: seeded.messageId,
      at: new Date(),
    });
  });
  return { ...seeded, attachmentId, raw, content };
}
