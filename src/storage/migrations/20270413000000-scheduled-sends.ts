import { Migration } from '@mikro-orm/migrations';

/**
 * Scheduled sends: the message keeps its due time and whether an inbound reply cancels it; its
 * outbox job is due at that time and names who scheduled it, because the policy, the loop guard
 * and the rate limit are decided when it leaves (the worker admits it then). A job without an
 * admitting actor was admitted at send, as before.
 */
export class Migration20270413000000ScheduledSends extends Migration {
  override up(): void {
    this.addSql(
      `alter table "message" add column "send_at" timestamptz(3) null, add column "cancel_on_reply" boolean not null default false;`,
    );
    this.addSql(
      `alter table "outbox_job" add column "admit_token_id" varchar(40) null, add column "admit_channel" varchar(10) null;`,
    );
    // cancelOnReply looks for the scheduled messages of a thread at each inbound arrival in it.
    this.addSql(
      `create index "message_scheduled_thread_idx" on "message" ("thread_id") where "delivery_status" = 'scheduled';`,
    );
  }
}
