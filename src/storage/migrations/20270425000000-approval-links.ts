import { Migration } from '@mikro-orm/migrations';

/**
 * Approval links (docs/workflow.md, "Approval links"): per held message and approver, the notice
 * the worker mails (claimed under a lease like an outbox job) and the one-time credential it
 * carries, kept as a SHA-256 only. The audit trail names the person who decided through a link
 * (`actor_address`), where a token decision names its token.
 */
export class Migration20270425000000ApprovalLinks extends Migration {
  override up(): void {
    this.addSql(
      `create table "approval_link" ("message_id" varchar(40) not null, "approver_address" varchar(320) not null, "mailbox_id" varchar(40) not null, "secret_hash" varchar(64) null, "expires_at" timestamptz(3) null, "used_at" timestamptz(3) null, "status" varchar(16) not null, "attempts" int not null default 0, "run_after" timestamptz(3) not null, "lease_until" timestamptz(3) null, "locked_by" varchar(100) null, "last_error" text null, "sent_at" timestamptz(3) null, "created_at" timestamptz(3) not null, primary key ("message_id", "approver_address"));`,
    );
    this.addSql(`create index "approval_link_mailbox_id_index" on "approval_link" ("mailbox_id");`);
    this.addSql(`create unique index "approval_link_secret_uniq" on "approval_link" ("secret_hash");`);
    this.addSql(`create index "approval_link_due_idx" on "approval_link" ("run_after") where "status" = 'pending';`);
    this.addSql(
      `alter table "approval_link" add constraint "approval_link_message_id_foreign" foreign key ("message_id") references "message" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "approval_link" add constraint "approval_link_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "audit_entry" add column "actor_address" varchar(320) null;`);
  }
}
