import { Migration } from '@mikro-orm/migrations';

/**
 * `GET /api/messages?status=scheduled` (a mailbox's scheduled sends that have not left): a page is
 * one range scan of this partial index, newest first like every list, and its totalCount a count
 * of it; it holds only the scheduled rows, so it stays small whatever the mailbox size.
 */
export class Migration20270426000000ScheduledList extends Migration {
  override up(): void {
    this.addSql(
      `create index "message_scheduled_idx" on "message" ("mailbox_id", "created_at" desc, "id" desc) where "delivery_status" = 'scheduled' and "deleted_at" is null;`,
    );
  }
}
