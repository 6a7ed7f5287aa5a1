import { Migration } from '@mikro-orm/migrations';

/**
 * A sender becomes a known contact only when its mail was authenticated (docs/trust.md, "Known
 * contacts"): contacts that only an unauthenticated inbound message made are removed. Kept are
 * recipients of outbound mail that left without approval or was approved, and senders of
 * internal mail or of external mail whose DMARC passed.
 */
export class Migration20270402000100ContactsAuthenticated extends Migration {
  override up(): void {
    this.addSql(`delete from "mailbox_contact" c
      where not exists (
        select 1 from message_recipient r join message m on m.id = r.message_id
        where m.mailbox_id = c.mailbox_id and r.address = c.address
          and (m.approval_status is null or m.approval_status = 'approved'))
      and not exists (
        select 1 from message m
        where m.mailbox_id = c.mailbox_id and m.direction = 'inbound' and lower(btrim(m.from_address)) = c.address
          and (m.auth_results is null or m.auth_results #>> '{dmarc,result}' = 'pass'));`);
  }
}
