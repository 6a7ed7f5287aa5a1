import { notFound } from '../../base/errors.js';
import type { Principal } from '../../access/principal.js';
import { requireScope } from '../../access/access.js';
import { targetVisibility } from '../messages/message.access.js';
import { findMessage } from '../messages/message.store.js';
import { num, type Database } from '../../../storage/database.js';
import { messageAttachment } from './attachment.store.js';
import { trustOfRow, type MessageTrust } from '../messages/message-trust.js';

export interface AttachmentLocation {
  attachmentId: string;
  /** The mailbox of the message it belongs to (whose turn an extraction takes). */
  mailboxId: string;
  filename: string;
  contentType: string;
  sizeBytes: number;
  blobKey: string;
  /** origin and authenticated of the message that carried it, as its detail reports them. */
  trust: MessageTrust;
}

/**
 * Where the bytes of one attachment of a message live, for the channel that streams them: the
 * message must be visible to the caller (MailboxRead, same visibility and soft-delete rules as
 * reading it), and the attachment must belong to that message. Anything else is the same 404.
 */
export async function attachmentLocation(
  db: Database,
  principal: Principal,
  input: { messageId: string; attachmentId: string; mailboxAddress?: string | undefined },
): Promise<AttachmentLocation> {
  requireScope(principal, 'MailboxRead');
  const visibility = await targetVisibility(db, principal, input.mailboxAddress);
  const message = await findMessage(db.db, visibility, input.messageId);
  if (!message || message.deleted_at !== null) throw notFound('Attachment');
  const row = await messageAttachment(db.db, message.id, input.attachmentId);
  if (!row) throw notFound('Attachment');
  return {
    attachmentId: row.id,
    mailboxId: message.mailbox_id,
    filename: row.filename,
    contentType: row.content_type,
    sizeBytes: num(row.size_bytes),
    blobKey: row.blob_key,
    trust: trustOfRow(message),
  };
}
