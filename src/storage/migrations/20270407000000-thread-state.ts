import { Migration } from '@mikro-orm/migrations';

/**
 * Thread workflow state (docs/workflow.md, "Thread state"): open, awaiting_reply, needs_human or
 * closed, with when the thread started waiting and when to follow up. follow_up_notified_at is
 * the claim of the one `thread.follow-up-due` event, set in the transaction that appends it.
 * Existing threads start open. The due index holds only threads whose follow-up is still to come.
 */
export class Migration20270407000000ThreadState extends Migration {
  override up(): void {
    this.addSql(`alter table "thread" add column "state" varchar(16) not null default 'open',
      add column "awaiting_reply_since" timestamptz(3) null,
      add column "follow_up_at" timestamptz(3) null,
      add column "follow_up_notified_at" timestamptz(3) null;`);
    this.addSql(
      `create index "thread_state_list_idx" on "thread" ("mailbox_id", "state", "last_message_at" desc, "id" desc);`,
    );
    this.addSql(`create index "thread_list_idx" on "thread" ("mailbox_id", "last_message_at" desc, "id" desc);`);
    this.addSql(
      `create index "thread_follow_up_due_idx" on "thread" ("follow_up_at") where "state" = 'awaiting_reply' and "follow_up_notified_at" is null;`,
    );
  }
}
