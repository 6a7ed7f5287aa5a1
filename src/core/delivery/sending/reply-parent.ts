import { notFound } from '../../errors.js';
import type { Visibility } from '../../auth/principal.js';
import { sql, type Database } from '../../../storage/database.js';

export interface ParentMessage {
  id: string;
  mailboxId: string;
  threadId: string;
  direction: 'inbound' | 'outbound';
  subject: string;
  fromAddress: string;
  toAddresses: string[];
  internetMessageId: string | null;
  references: string[];
}

/**
 * The message being replied to, if the caller may see it: a mailbox token sees its mailbox, a
 * domain token its domain. Soft-deleted, unknown and invisible are the same 404.
 */
export async function findReplyParent(db: Database, visibility: Visibility, messageId: string): Promise<ParentMessage> {
  const scope =
    visibility.kind === 'mailbox'
      ? sql`m.mailbox_id = ${visibility.mailboxId}`
      : sql`mb.domain_id = ${visibility.domainId}`;
  const row = await db.one(sql<{
    id: string;
    mailbox_id: string;
    thread_id: string;
    direction: 'inbound' | 'outbound';
    subject: string;
    from_address: string;
    to_addresses: string[];
    internet_message_id: string | null;
    references_header: string[];
  }>`select m.id, m.mailbox_id, m.thread_id, m.direction, m.subject, m.from_address, m.to_addresses, m.internet_message_id, m.references_header
    from message m join mailbox mb on mb.id = m.mailbox_id
    where m.id = ${messageId} and m.deleted_at is null and ${scope}`);
  if (!row) throw notFound('Message');
  return {
    id: row.id,
    mailboxId: row.mailbox_id,
    threadId: row.thread_id,
    direction: row.direction,
    subject: row.subject,
    fromAddress: row.from_address,
    toAddresses: row.to_addresses,
    internetMessageId: row.internet_message_id,
    references: row.references_header,
  };
}
