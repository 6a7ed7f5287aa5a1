import { Migration } from '@mikro-orm/migrations';

/**
 * Outbound policy: mailbox and token policies, the approval state of held messages,
 * the audit trail, and the indexes the policy's questions need ("was this address ever written
 * to or heard from", "how many replies to this counterparty in the last hour").
 */
export class Migration20261223000000OutboundPolicy extends Migration {
  override up(): void {
    this.addSql(`alter table "mailbox" add column "policy" jsonb null;`);
    this.addSql(`alter table "access_token" add column "policy" jsonb null;`);
    this.addSql(
      `alter table "message" add column "approval_status" varchar(16) null, add column "approval_decided_at" timestamptz(3) null, add column "approval_decided_by" varchar(40) null, add column "auto_submitted" varchar(32) null;`,
    );
    this.addSql(
      `create index "message_approval_idx" on "message" ("mailbox_id", "created_at" desc, "id" desc) where "approval_status" = 'pending' and "deleted_at" is null;`,
    );
    this.addSql(
      `create index "message_approval_due_idx" on "message" ("created_at") where "approval_status" = 'pending';`,
    );
    this.addSql(`create index "message_recipient_address_idx" on "message_recipient" ("address");`);
    this.addSql(
      `create index "message_inbound_from_idx" on "message" ("mailbox_id", "from_address") where "direction" = 'inbound';`,
    );
    this.addSql(
      `create table "audit_entry" ("id" varchar(40) not null, "mailbox_id" varchar(40) not null, "domain_id" varchar(40) not null, "token_id" varchar(40) null, "channel" varchar(16) not null, "decision" varchar(16) not null, "rule" varchar(40) null, "reason" text null, "recipient_count" int not null default 0, "new_recipient_count" int not null default 0, "message_id" varchar(40) null, "created_at" timestamptz(3) not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "audit_entry" add constraint "audit_entry_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `create index "audit_entry_mailbox_idx" on "audit_entry" ("mailbox_id", "created_at" desc, "id" desc);`,
    );
    this.addSql(`create index "audit_entry_domain_idx" on "audit_entry" ("domain_id", "created_at" desc, "id" desc);`);
    this.addSql(`create index "audit_entry_created_idx" on "audit_entry" ("created_at");`);
  }
}
