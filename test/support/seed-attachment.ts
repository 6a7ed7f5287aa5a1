import { insertAttachment } from '../../src/core/state/attachments/attachment.store.js';
import { ID_PREFIX, newId } from '../../src/core/base/ids.js';
import { sql } from '../../src/storage/database.js';
import type { TestServer } from './harness.js';
import { seedMessage } from './seed-messages.js';

/** A live message of `mailbox` with one attachment of the given bytes, stored in the real blob store. */
export async function seedAttachment(
  server: TestServer,
  mailbox: { mailboxId: string },
  file: { filename: string; contentType: string; bytes: Buffer },
): Promise<{ messageId: string; attachmentId: string }> {
  const { blobs, db } = server.runtime.services;
  const seeded = await seedMessage(server, { mailboxId: mailbox.mailboxId, subject: file.filename });
  const blobKey = `att/${newId(ID_PREFIX.attachment)}`;
  const stored = await blobs.put(blobKey, file.bytes);
  const attachmentId = await db.tx(async (trx) => {
    await sql`update message set attachment_count = 1 where id = ${seeded.messageId}`.execute(trx);
    return insertAttachment(trx, {
      filename: file.filename,
      contentType: file.contentType,
      sizeBytes: stored.sizeBytes,
      sha256: stored.sha256,
      blobKey,
      mailboxId: mailbox.mailboxId,
      messageId: seeded.messageId,
      at: new Date(),
    });
  });
  return { messageId: seeded.messageId, attachmentId };
}
