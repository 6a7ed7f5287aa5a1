import { Migration } from '@mikro-orm/migrations';

/**
 * Queued submission on port 587 (docs/api.md, "Queued intake"): the 250 follows the commit of one
 * queue row (the raw message, the mailbox (id, address, names) and token it was submitted with, the policy's verdict,
 * the quota it reserves) instead of the message rows, which a worker writes behind it. The row's
 * id is the message id the 250 names. Raw messages are compressed with lz4 where the server has it.
 */
export class Migration20270310000000SubmissionQueue extends Migration {
  override up(): void {
    this.addSql(
      `create table "submission_queue" ("id" varchar(40) not null, "status" varchar(16) not null, "received_at" timestamptz(3) not null, "mailbox" jsonb not null, "token_id" varchar(40) not null, "mail_from" text not null, "recipients" jsonb not null, "verdict" jsonb not null, "trace_context" text null, "reserved_bytes" bigint not null, "raw" bytea not null, "attempts" int not null default 0, "run_after" timestamptz(3) not null, "lease_until" timestamptz(3) null, "locked_by" varchar(100) null, "last_error" text null, primary key ("id"));`,
    );
    this.addSql(
      `create index "submission_queue_due_idx" on "submission_queue" ("run_after") where "status" = 'pending';`,
    );
    this.addSql(`do $$ begin alter table "submission_queue" alter column "raw" set compression lz4;
      exception when feature_not_supported then raise notice 'lz4 is not available here: queued raw messages stay pglz'; end $$;`);
  }
}
