import { num, sql, type Database, type Sql } from '../../../storage/database.js';
import type { Col, Row } from '../../../storage/rows.js';
import type { Visibility } from '../../access/principal.js';
import { assertAllFound } from '../attachments/attachment.store.js';

export type DraftRow = Row<
  'draft',
  | 'id'
  | 'mailbox_id'
  | 'to_addresses'
  | 'cc_addresses'
  | 'bcc_addresses'
  | 'subject'
  | 'body_text'
  | 'body_html'
  | 'parent_message_id'
  | 'reply_all'
  | 'send_at'
  | 'cancel_on_reply'
  | 'created_by_token_id'
  | 'revision'
  | 'created_at'
  | 'updated_at'
> & { mailbox_address: Col<'mailbox', 'address'> };

/** A row of a page: the bodies stay unread, the text body's start is enough for its snippet. */
export type DraftPageRow = Omit<DraftRow, 'body_text' | 'body_html'> & { body_start: string | null };

export type DraftAttachmentRow = Row<'attachment', 'id' | 'draft_id' | 'filename' | 'content_type' | 'size_bytes'>;

const COLUMNS = sql`d.id, d.mailbox_id, mb.address as mailbox_address, d.to_addresses, d.cc_addresses,
  d.bcc_addresses, d.subject, d.parent_message_id, d.reply_all, d.send_at, d.cancel_on_reply,
  d.created_by_token_id, d.revision, d.created_at, d.updated_at`;

const visible = (v: Visibility) =>
  v.kind === 'mailbox' ? sql`d.mailbox_id = ${v.mailboxId}` : sql`mb.domain_id = ${v.domainId}`;

/** A draft the caller may see, with its bodies (`on`: inside a transaction). */
export async function visibleDraft(
  db: Database,
  v: Visibility,
  draftId: string,
  on?: Sql,
): Promise<DraftRow | undefined> {
  return db.one(
    sql<DraftRow>`select ${COLUMNS}, d.body_text, d.body_html
      from draft d join mailbox mb on mb.id = d.mailbox_id where d.id = ${draftId} and ${visible(v)}`,
    on,
  );
}

/** A page of a mailbox's drafts, newest first (draft_list_idx), and how many it has. */
export async function draftPage(
  db: Database,
  mailboxId: string,
  after: { t: number; i: string } | null,
  limit: number,
): Promise<{ rows: DraftPageRow[]; total: number }> {
  const position = after ? sql`and (d.created_at, d.id) < (${new Date(after.t)}::timestamptz, ${after.i})` : sql``;
  const [rows, total] = await Promise.all([
    db.rows(sql<DraftPageRow>`select ${COLUMNS}, left(d.body_text, 400) as body_start
      from draft d join mailbox mb on mb.id = d.mailbox_id
      where d.mailbox_id = ${mailboxId} ${position} order by d.created_at desc, d.id desc limit ${limit}`),
    db.one(sql<{ n: unknown }>`select count(*) as n from draft where mailbox_id = ${mailboxId}`),
  ]);
  return { rows, total: num(total?.n) };
}

/** The uploads the drafts among `draftIds` hold, in upload order. */
export async function draftAttachments(db: Sql, draftIds: readonly string[]): Promise<DraftAttachmentRow[]> {
  if (draftIds.length === 0) return [];
  return (
    await sql<DraftAttachmentRow>`select id, draft_id, filename, content_type, size_bytes from attachment
      where draft_id = any(${[...draftIds]}::text[]) order by created_at, id`.execute(db)
  ).rows;
}

/**
 * The mailbox of a live (not deleted) message the caller may see, for a reply draft's parent;
 * undefined when there is none.
 */
export async function liveMessageMailbox(db: Database, v: Visibility, messageId: string): Promise<string | undefined> {
  const scope = v.kind === 'mailbox' ? sql`m.mailbox_id = ${v.mailboxId}` : sql`mb.domain_id = ${v.domainId}`;
  return (
    await db.one(sql<{ mailbox_id: string }>`select m.mailbox_id from message m join mailbox mb on mb.id = m.mailbox_id
      where m.id = ${messageId} and m.deleted_at is null and ${scope}`)
  )?.mailbox_id;
}

/** The stored columns of a draft's content. */
export interface DraftColumns {
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string | null;
  bodyText: string | null;
  bodyHtml: string | null;
  parentMessageId: string | null;
  replyAll: boolean;
  sendAt: Date | null;
  cancelOnReply: boolean;
}

export async function insertDraft(
  trx: Sql,
  row: DraftColumns & { id: string; mailboxId: string; tokenId: string | null; at: Date },
): Promise<void> {
  await sql`insert into draft (id, mailbox_id, to_addresses, cc_addresses, bcc_addresses, subject, body_text, body_html,
      parent_message_id, reply_all, send_at, cancel_on_reply, created_by_token_id, revision, created_at, updated_at)
    values (${row.id}, ${row.mailboxId}, ${row.to}::text[], ${row.cc}::text[], ${row.bcc}::text[], ${row.subject},
      ${row.bodyText}, ${row.bodyHtml}, ${row.parentMessageId}, ${row.replyAll}, ${row.sendAt}, ${row.cancelOnReply},
      ${row.tokenId}, 1, ${row.at}, ${row.at})`.execute(trx);
}

/** Writes a draft's whole content and raises its revision. */
export async function updateDraft(trx: Sql, draftId: string, c: DraftColumns, at: Date): Promise<void> {
  await sql`update draft set to_addresses = ${c.to}::text[], cc_addresses = ${c.cc}::text[],
      bcc_addresses = ${c.bcc}::text[], subject = ${c.subject}, body_text = ${c.bodyText}, body_html = ${c.bodyHtml},
      parent_message_id = ${c.parentMessageId}, reply_all = ${c.replyAll}, send_at = ${c.sendAt},
      cancel_on_reply = ${c.cancelOnReply}, revision = revision + 1, updated_at = ${at}
    where id = ${draftId}`.execute(trx);
}

/**
 * Makes the draft hold exactly the uploads `ids`: uploads of its mailbox no message claimed and no
 * other draft holds. Any other id is ATTACHMENT_UNKNOWN, worded as a send words it. Uploads it
 * held before and no longer names go back to being plain unclaimed uploads.
 */
export async function holdUploads(trx: Sql, mailboxId: string, draftId: string, ids: readonly string[]): Promise<void> {
  await sql`update attachment set draft_id = null
    where draft_id = ${draftId} and not (id = any(${[...ids]}::text[]))`.execute(trx);
  if (ids.length === 0) return;
  const held = (
    await sql<{ id: string }>`update attachment set draft_id = ${draftId}
      where mailbox_id = ${mailboxId} and message_id is null and (draft_id is null or draft_id = ${draftId})
        and id = any(${[...ids]}::text[]) returning id`.execute(trx)
  ).rows;
  assertAllFound(ids, held);
}

/** Deletes a draft (its uploads are released by the foreign key); whether it was there. */
export async function deleteDraft(trx: Sql, draftId: string): Promise<boolean> {
  const rows = (await sql<{ id: string }>`delete from draft where id = ${draftId} returning id`.execute(trx)).rows;
  return rows.length > 0;
}

/**
 * Deletes the draft being sent, only as the send read it (`revision`): what happened instead.
 * `changed` means another write came between the read and the send.
 */
export async function deleteSentDraft(
  trx: Sql,
  draftId: string,
  revision: number,
): Promise<'deleted' | 'changed' | 'gone'> {
  const deleted = (
    await sql<{ id: string }>`delete from draft where id = ${draftId} and revision = ${revision} returning id`.execute(
      trx,
    )
  ).rows;
  if (deleted.length > 0) return 'deleted';
  const still = (await sql<{ id: string }>`select id from draft where id = ${draftId}`.execute(trx)).rows;
  return still.length > 0 ? 'changed' : 'gone';
}
