import { Migration } from '@mikro-orm/migrations';

/**
 * The reply text of an inbound message is no longer found by the intake that stores it
 * (email-reply-parser: 1.4 ms per 10 KB message on port 25, bench/smtp --cpu-prof) but by the
 * worker after the commit (src/core/state/extraction/reply-text-backfill.ts). This partial index finds
 * the messages still waiting; it is empty once the worker has caught up.
 */
export class Migration20270205000000ReplyTextDeferred extends Migration {
  override up(): void {
    this.addSql(
      `create index "message_reply_text_pending_idx" on "message" ("id") where "extracted" is not null and not ("extracted" ? 'replyText');`,
    );
  }
}
