import { notFound } from '../../base/errors.js';
import type { Visibility } from '../../access/principal.js';
import type { Database } from '../../../storage/database.js';
import { replyParentRow } from './outbound.store.js';

export interface ParentMessage {
  id: string;
  mailboxId: string;
  threadId: string;
  direction: 'inbound' | 'outbound';
  subject: string;
  fromAddress: string;
  toAddresses: string[];
  ccAddresses: string[];
  replyToAddresses: string[];
  internetMessageId: string | null;
  references: string[];
}

/**
 * The message being replied to, if the caller may see it: a mailbox token sees its mailbox, a
 * domain token its domain. Soft-deleted, unknown and invisible are the same 404.
 */
export async function findReplyParent(db: Database, visibility: Visibility, messageId: string): Promise<ParentMessage> {
  const row = await replyParentRow(db, visibility, messageId);
  if (!row) throw notFound('Message');
  return {
    id: row.id,
    mailboxId: row.mailbox_id,
    threadId: row.thread_id,
    direction: row.direction,
    subject: row.subject,
    fromAddress: row.from_address,
    toAddresses: row.to_addresses,
    ccAddresses: row.cc_addresses,
    replyToAddresses: row.reply_to_addresses,
    internetMessageId: row.internet_message_id,
    references: row.references_header,
  };
}
