import { Migration } from '@mikro-orm/migrations';

/**
 * Webhooks (docs/api.md, "Webhooks"). `webhook_delivery` is their own durable outbox: one row per
 * (webhook, mailbox, event sequence), written by appendEvent in the transaction that appends the
 * event, so a webhook sees exactly the events and eventIds of the real-time log, and a crash can
 * lose none. Rows are delivered in sequence order per webhook and mailbox, under a lease.
 */
export class Migration20270110000300Webhooks extends Migration {
  override up(): void {
    this.addSql(
      `create table "webhook" ("id" varchar(40) not null, "domain_id" varchar(40) not null, "mailbox_id" varchar(40) null, "url" varchar(2048) not null, "event_types" text[] null, "mailbox_ids" text[] null, "secret_cipher" text not null, "created_by_token_id" varchar(40) null, "created_at" timestamptz(3) not null, "disabled_at" timestamptz(3) null, "disabled_reason" text null, "failing_since" timestamptz(3) null, "last_success_at" timestamptz(3) null, "last_failure_at" timestamptz(3) null, "last_error" text null, primary key ("id"));`,
    );
    this.addSql(`create index "webhook_domain_live_idx" on "webhook" ("domain_id") where "disabled_at" is null;`);
    this.addSql(
      `alter table "webhook" add constraint "webhook_domain_id_foreign" foreign key ("domain_id") references "domain" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "webhook" add constraint "webhook_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "webhook_delivery" ("webhook_id" varchar(40) not null, "mailbox_id" varchar(40) not null, "seq" bigint not null, "payload" jsonb not null, "status" varchar(16) not null, "attempts" int not null default 0, "next_attempt_at" timestamptz(3) not null, "lease_until" timestamptz(3) null, "locked_by" varchar(100) null, "last_error" text null, "created_at" timestamptz(3) not null, "delivered_at" timestamptz(3) null, primary key ("webhook_id", "mailbox_id", "seq"));`,
    );
    this.addSql(
      `create index "webhook_delivery_due_idx" on "webhook_delivery" ("next_attempt_at") where "status" = 'pending';`,
    );
    this.addSql(
      `alter table "webhook_delivery" add constraint "webhook_delivery_webhook_id_foreign" foreign key ("webhook_id") references "webhook" ("id") on delete cascade;`,
    );
  }
}
