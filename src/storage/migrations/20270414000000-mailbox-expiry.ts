import { Migration } from '@mikro-orm/migrations';

/**
 * An ephemeral mailbox's end (`ttlSeconds` at creation). The partial index keeps the expiry
 * sweeper's scan to the few mailboxes that have one.
 */
export class Migration20270414000000MailboxExpiry extends Migration {
  override up(): void {
    this.addSql(`alter table "mailbox" add column "expires_at" timestamptz(3) null;`);
    this.addSql(`create index "mailbox_expires_at_index" on "mailbox" ("expires_at") where "expires_at" is not null;`);
  }
}
