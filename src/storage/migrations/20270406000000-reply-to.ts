import { Migration } from '@mikro-orm/migrations';

/**
 * The Reply-To addresses an inbound message carried (docs/workflow.md, "Reply all"): a reply-all
 * answers them instead of the sender. Older rows have none, so their replies go to the sender.
 */
export class Migration20270406000000ReplyTo extends Migration {
  override up(): void {
    this.addSql(`alter table "message" add column "reply_to_addresses" text[] not null default '{}';`);
  }
}
