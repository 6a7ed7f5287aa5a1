import { sql, type Sql } from '../../../storage/database.js';
import type { Row } from '../../../storage/rows.js';
import type { Visibility } from '../../access/principal.js';
import { visible } from '../messages/message.store.js';

/** Distinct contact domains read per message at most: bounds the look-alike comparison. */
export const MAX_CONTACT_DOMAINS = 500;

export type ScreeningContextRow = Row<'mailbox', 'address' | 'policy'> & { contact_domains: string[] | null };

/**
 * What screening needs of the receiving mailbox, in one statement: its address (its own domain),
 * its policy (holdAtScore) and the domains of its contacts (contacts.store.ts), read before this
 * message's sender joins them.
 */
export async function screeningContext(trx: Sql, mailboxId: string): Promise<ScreeningContextRow | undefined> {
  return (
    await sql<ScreeningContextRow>`select mb.address, mb.policy,
      array(select distinct split_part(c.address, '@', 2) from mailbox_contact c
        where c.mailbox_id = mb.id limit ${MAX_CONTACT_DOMAINS}) as contact_domains
    from mailbox mb where mb.id = ${mailboxId}`.execute(trx)
  ).rows[0];
}

/** Held inbound mail of a mailbox (the `?screening=held` list's totalCount; message_held_idx). */
export async function heldCount(db: Sql, mailboxId: string): Promise<number> {
  const row = (
    await sql<{ n: number }>`select count(*)::int as n from message
    where mailbox_id = ${mailboxId} and screening_held and deleted_at is null`.execute(db)
  ).rows[0];
  return row?.n ?? 0;
}

/** A held message as its release reads it: what its message.received event and audit entry say. */
export type ReleasedRow = Row<
  'message',
  | 'id'
  | 'mailbox_id'
  | 'thread_id'
  | 'subject'
  | 'from_address'
  | 'from_display_name'
  | 'to_addresses'
  | 'cc_addresses'
  | 'attachment_count'
  | 'in_reply_to_message_id'
  | 'received_at'
  | 'created_at'
  | 'auth_results'
  | 'screening'
> &
  Row<'mailbox', 'domain_id'>;

/** Lets one held message through: one conditional UPDATE, so two releases never both emit. */
export async function releaseHeld(trx: Sql, v: Visibility, messageId: string): Promise<ReleasedRow | undefined> {
  return (
    await sql<ReleasedRow>`update message m set screening_held = false from mailbox mb
    where m.id = ${messageId} and mb.id = m.mailbox_id and ${visible(v)}
      and m.screening_held and m.deleted_at is null
    returning m.id, m.mailbox_id, m.thread_id, m.subject, m.from_address, m.from_display_name, m.to_addresses,
      m.cc_addresses, m.attachment_count, m.in_reply_to_message_id, m.received_at, m.created_at, m.auth_results,
      m.screening, mb.domain_id`.execute(trx)
  ).rows[0];
}

/** Whether a live message the caller may see exists (a release of mail not held answers, not 404s). */
export async function liveMessageExists(db: Sql, v: Visibility, messageId: string): Promise<boolean> {
  const rows = (
    await sql<{ id: string }>`select m.id from message m join mailbox mb on mb.id = m.mailbox_id
    where m.id = ${messageId} and m.deleted_at is null and ${visible(v)}`.execute(db)
  ).rows;
  return rows.length > 0;
}
