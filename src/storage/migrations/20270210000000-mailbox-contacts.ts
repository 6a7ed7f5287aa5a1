import { Migration } from '@mikro-orm/migrations';

/**
 * The addresses each mailbox has corresponded with, for the outbound policy's "new recipient"
 * (docs/api.md, "Outbound policy"). Asked of the messages, the question read every earlier
 * message of the mailbox when PostgreSQL planned it as a hashed subplan (bench/smtp: 1.9 ms of
 * PostgreSQL per submission at 360 messages a mailbox, growing with the mailbox); here it is one
 * primary-key probe per address. Backfilled from what the question used to read: recipients of
 * outbound messages sent without approval or approved, and senders of inbound messages.
 */
export class Migration20270210000000MailboxContacts extends Migration {
  override up(): void {
    this.addSql(
      `create table "mailbox_contact" ("mailbox_id" varchar(40) not null, "address" varchar(320) not null, "created_at" timestamptz(3) not null, primary key ("mailbox_id", "address"));`,
    );
    this.addSql(
      `alter table "mailbox_contact" add constraint "mailbox_contact_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(`insert into "mailbox_contact" ("mailbox_id", "address", "created_at")
      select m.mailbox_id, r.address, min(m.created_at) from message_recipient r join message m on m.id = r.message_id
      where m.approval_status is null or m.approval_status = 'approved'
      group by m.mailbox_id, r.address
      on conflict do nothing;`);
    this.addSql(`insert into "mailbox_contact" ("mailbox_id", "address", "created_at")
      select m.mailbox_id, lower(btrim(m.from_address)), min(m.created_at) from message m
      where m.direction = 'inbound' and btrim(m.from_address) <> ''
      group by m.mailbox_id, lower(btrim(m.from_address))
      on conflict do nothing;`);
  }
}
