import { Migration } from '@mikro-orm/migrations';

/**
 * Queued intake on port 25 (docs/api.md, "Queued intake"): the 250 follows the commit of one
 * queue row (the raw message, its envelope, the quota it reserves) instead of the message rows,
 * which a worker writes behind it. Raw messages are compressed with lz4 where the server has it
 * (see 20270215000000-lz4-compression).
 */
export class Migration20270301000000InboundQueue extends Migration {
  override up(): void {
    this.addSql(
      `create table "inbound_queue" ("id" varchar(40) not null, "status" varchar(16) not null, "received_at" timestamptz(3) not null, "mail_from" text not null, "recipients" jsonb not null, "client_address" varchar(64) not null, "helo" text not null, "tls" boolean not null, "reserved_bytes" bigint not null, "raw" bytea not null, "attempts" int not null default 0, "run_after" timestamptz(3) not null, "lease_until" timestamptz(3) null, "locked_by" varchar(100) null, "last_error" text null, primary key ("id"));`,
    );
    this.addSql(`create index "inbound_queue_due_idx" on "inbound_queue" ("run_after") where "status" = 'pending';`);
    this.addSql(`do $$ begin alter table "inbound_queue" alter column "raw" set compression lz4;
      exception when feature_not_supported then raise notice 'lz4 is not available here: queued raw messages stay pglz'; end $$;`);
  }
}
