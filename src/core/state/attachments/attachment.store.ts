import { AppError } from '../../base/errors.js';
import { ID_PREFIX, newId } from '../../base/ids.js';
import { sql, num, type Sql } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';

/** The stored facts of one attachment, as a message copy needs them. */
export interface AttachmentFile {
  filename: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
  blobKey: string;
  /** The part's Content-ID without angle brackets (RFC 2392), what `cid:` in an HTML body names. */
  contentId?: string | null;
  /** `inline` when the part asked to be shown in the body, else `attachment`. */
  disposition?: 'inline' | 'attachment';
}

export async function insertAttachment(
  trx: Sql,
  row: AttachmentFile & { id?: string; mailboxId: string; messageId: string | null; at: Date },
): Promise<string> {
  const id = row.id ?? newId(ID_PREFIX.attachment);
  await sql`insert into attachment (id, mailbox_id, message_id, filename, content_type, size_bytes, sha256, blob_key, created_at, content_id, disposition)
    values (${id}, ${row.mailboxId}, ${row.messageId}, ${row.filename}, ${row.contentType}, ${row.sizeBytes}, ${row.sha256}, ${row.blobKey}, ${row.at}, ${row.contentId ?? null}, ${row.disposition ?? 'attachment'})`.execute(
    trx,
  );
  return id;
}

/**
 * Attaches staged uploads to a message. Only uploads of the same mailbox that no message has
 * claimed yet qualify, and no draft holds (but `draftId`, the draft being sent); the conditional
 * update makes two sends racing for one upload end with exactly one winner. Anything short of all
 * ids is ATTACHMENT_UNKNOWN (the caller's transaction then rolls back, releasing the ones that did match).
 */
export async function claimAttachments(
  trx: Sql,
  mailboxId: string,
  messageId: string,
  ids: readonly string[],
  draftId: string | null = null,
): Promise<void> {
  if (ids.length === 0) return;
  const held = draftId === null ? sql`draft_id is null` : sql`(draft_id is null or draft_id = ${draftId})`;
  const claimed = (
    await sql<{ id: string }>`update attachment set message_id = ${messageId}
    where mailbox_id = ${mailboxId} and message_id is null and ${held} and id = any(${[...ids]}::text[])
    returning id`.execute(trx)
  ).rows;
  assertAllFound(ids, claimed);
}

/**
 * ATTACHMENT_UNKNOWN naming the ids among `ids` that a claim or a draft's hold did not find, in
 * the same words whatever the reason, so another tenant's upload id answers like an unknown one.
 */
export function assertAllFound(ids: readonly string[], found: readonly { id: string }[]): void {
  if (found.length === ids.length) return;
  const missing = ids.filter((id) => !found.some((f) => f.id === id));
  throw new AppError(
    'ATTACHMENT_UNKNOWN',
    `attachmentIds: ${missing.join(', ')} is unknown, already used, or belongs to another mailbox.`,
  );
}

/** The attachments of one message, in upload order. */
export async function attachmentsOfMessage(trx: Sql, messageId: string): Promise<AttachmentFile[]> {
  const rows = (
    await sql<{
      filename: string;
      content_type: string;
      size_bytes: string | number;
      sha256: string;
      blob_key: string;
    }>`
    select filename, content_type, size_bytes, sha256, blob_key from attachment where message_id = ${messageId} order by created_at, id`.execute(
      trx,
    )
  ).rows;
  return rows.map((r) => ({
    filename: r.filename,
    contentType: r.content_type,
    sizeBytes: num(r.size_bytes),
    sha256: r.sha256,
    blobKey: r.blob_key,
  }));
}

/** Deletes staged uploads among `ids` that no message claimed (a submission that failed). */
export async function deleteUnclaimedAttachments(db: Sql, ids: readonly string[]): Promise<void> {
  await sql`delete from attachment where id = any(${[...ids]}::text[]) and message_id is null`.execute(db);
}

/** An attachment of a message, with its blob key. */
export async function messageAttachment(
  db: Sql,
  messageId: string,
  attachmentId: string,
): Promise<Row<'attachment', 'id' | 'filename' | 'content_type' | 'size_bytes' | 'blob_key'> | undefined> {
  return (
    await sql<Row<'attachment', 'id' | 'filename' | 'content_type' | 'size_bytes' | 'blob_key'>>`
    select id, filename, content_type, size_bytes, blob_key from attachment where id = ${attachmentId} and message_id = ${messageId}`.execute(
      db,
    )
  ).rows[0];
}
