import { sql, type Sql, type SqlFragment } from '../../../storage/database.js';
import { normalizeAddress } from '../../base/address.js';

/**
 * The addresses a mailbox has corresponded with (`mailbox_contact`): no longer "new recipients"
 * for the outbound policy (docs/trust.md, "Known contacts"). Written, in the transaction that
 * makes an address known, by: a send that leaves without approval (outbound.store), an approval
 * (approval.service), and an inbound message whose sender is authenticated (inbound.store). An
 * unauthenticated sender never becomes known: anyone can write any From, so one forged mail
 * would otherwise open `approval: new-recipients` to the forger's address. Each writer holds the
 * mailbox row lock first (the charge or the event append), so two writers of one mailbox never
 * wait on each other's contact rows in opposite orders.
 */

/**
 * The statement that records as contacts of the mailbox the addresses `addresses` selects (one
 * `address` column, normalized already); a writer may run it as part of a larger statement.
 */
export const insertContactsSql = (mailboxId: string, addresses: SqlFragment, at: Date) =>
  sql`insert into mailbox_contact (mailbox_id, address, created_at)
    select distinct ${mailboxId}, s.address, ${at}::timestamptz from (${addresses}) as s
    on conflict do nothing`;

/**
 * Records the sender of an inbound message (lower-cased, as the policy compares recipients; none
 * for an empty sender) when it is authenticated (message-trust.ts: internal, or DMARC passed);
 * the intake runs it as a CTE of its message insert.
 */
export const inboundSenderContactSql = (mailboxId: string, from: string, authenticated: boolean, at: Date) =>
  insertContactsSql(
    mailboxId,
    sql`select a.address from (select ${normalizeAddress(from)}::text as address) a
      where a.address <> '' and ${authenticated}::boolean`,
    at,
  );

/** The recipients of an approved message become contacts of its mailbox. */
export async function recordRecipientsOf(trx: Sql, mailboxId: string, messageId: string, at: Date): Promise<void> {
  await insertContactsSql(
    mailboxId,
    sql`select r.address from message_recipient r where r.message_id = ${messageId}`,
    at,
  ).execute(trx);
}

/** The addresses among `addresses` the mailbox has corresponded with: one primary-key probe each. */
export const contactedSql = (mailboxId: string, addresses: readonly string[]) =>
  sql`select address from mailbox_contact where mailbox_id = ${mailboxId} and address = any(${[...addresses]}::text[])`;
