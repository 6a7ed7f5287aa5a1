import { notFound } from '../../base/errors.js';
import type { Visibility } from '../../access/principal.js';
import { sql, type Database } from '../../../storage/database.js';
import { attachmentsOfMessage, type AttachmentFile } from '../../state/attachments/attachment.store.js';

/** The message being forwarded, with what a forward repeats of it. */
export interface ForwardSource {
  id: string;
  mailboxId: string;
  subject: string;
  fromAddress: string;
  fromDisplayName: string;
  toAddresses: string[];
  ccAddresses: string[];
  at: Date;
  bodyText: string | null;
  bodyHtml: string | null;
  attachments: AttachmentFile[];
}

/** A live message the caller may see, with its attachments; else the same 404 as a reply's parent. */
export async function findForwardSource(
  db: Database,
  visibility: Visibility,
  messageId: string,
): Promise<ForwardSource> {
  const scope =
    visibility.kind === 'mailbox'
      ? sql`m.mailbox_id = ${visibility.mailboxId}`
      : sql`mb.domain_id = ${visibility.domainId}`;
  const row = await db.one(sql<{
    id: string;
    mailbox_id: string;
    subject: string;
    from_address: string;
    from_display_name: string;
    to_addresses: string[];
    cc_addresses: string[];
    created_at: Date | string;
    received_at: Date | string | null;
    body_text: string | null;
    body_html: string | null;
  }>`select m.id, m.mailbox_id, m.subject, m.from_address, m.from_display_name, m.to_addresses, m.cc_addresses,
      m.created_at, m.received_at, m.body_text, m.body_html
    from message m join mailbox mb on mb.id = m.mailbox_id
    where m.id = ${messageId} and m.deleted_at is null and ${scope}`);
  if (!row) throw notFound('Message');
  return {
    id: row.id,
    mailboxId: row.mailbox_id,
    subject: row.subject,
    fromAddress: row.from_address,
    fromDisplayName: row.from_display_name,
    toAddresses: row.to_addresses,
    ccAddresses: row.cc_addresses,
    at: new Date(row.received_at ?? row.created_at),
    bodyText: row.body_text,
    bodyHtml: row.body_html,
    attachments: await attachmentsOfMessage(db.db, row.id),
  };
}
