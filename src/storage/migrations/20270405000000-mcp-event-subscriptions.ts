import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook subscriptions of the MCP events extension (docs/mcp.md, "Webhook subscriptions"). Each
 * owns one webhook row, hidden from the webhook routes, so the webhook outbox, worker, signing,
 * retries and network-target rule deliver it like any webhook; this row holds what makes it a
 * subscription: the subscribing token, the lease, and the key a refresh finds it by.
 */
export class Migration20270405000000McpEventSubscriptions extends Migration {
  override up(): void {
    this.addSql(
      `create table "mcp_event_subscription" ("id" varchar(40) not null, "webhook_id" varchar(40) not null, "token_id" varchar(40) not null, "mailbox_id" varchar(40) not null, "event_type" varchar(64) not null, "subscription_key" varchar(64) not null, "start_seq" bigint not null, "refresh_before" timestamptz(3) not null, "created_at" timestamptz(3) not null, primary key ("id"));`,
    );
    this.addSql(
      `create unique index "mcp_event_subscription_key_uniq" on "mcp_event_subscription" ("subscription_key");`,
    );
    this.addSql(
      `create unique index "mcp_event_subscription_webhook_uniq" on "mcp_event_subscription" ("webhook_id");`,
    );
    this.addSql(`create index "mcp_event_subscription_refresh_idx" on "mcp_event_subscription" ("refresh_before");`);
    this.addSql(
      `alter table "mcp_event_subscription" add constraint "mcp_event_subscription_webhook_id_foreign" foreign key ("webhook_id") references "webhook" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "mcp_event_subscription" add constraint "mcp_event_subscription_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
  }
}
