import { Migration } from '@mikro-orm/migrations';

/** The initial schema, generated from the entities (scripts/schema-sql.ts) and reviewed by hand. */
export class Migration20261122000000Initial extends Migration {
  override up(): void {
    this.addSql(
      `create table "blob" ("key" varchar(200) not null, "data" bytea not null, "size_bytes" bigint not null, "created_at" timestamptz(3) not null, primary key ("key"));`,
    );
    this.addSql(
      `create table "domain" ("id" varchar(40) not null, "name" varchar(253) not null, "send_rate_limit_per_minute" int null, "resource_key" varchar(300) null, "created_at" timestamptz(3) not null, "disabled_at" timestamptz(3) null, primary key ("id"));`,
    );
    this.addSql(`alter table "domain" add constraint "domain_name_unique" unique ("name");`);
    this.addSql(`alter table "domain" add constraint "domain_resource_key_unique" unique ("resource_key");`);
    this.addSql(
      `create table "mailbox" ("id" varchar(40) not null, "domain_id" varchar(40) not null, "address" varchar(320) not null, "local_part" varchar(64) not null, "display_name" varchar(200) not null default '', "notes" text null, "password_hash" varchar(300) null, "send_rate_limit_per_minute" int null, "resource_key" varchar(300) null, "event_seq" bigint not null default '0', "inbound_count" bigint not null default '0', "outbound_count" bigint not null default '0', "created_at" timestamptz(3) not null, "disabled_at" timestamptz(3) null, primary key ("id"));`,
    );
    this.addSql(`create index "mailbox_domain_id_index" on "mailbox" ("domain_id");`);
    this.addSql(`alter table "mailbox" add constraint "mailbox_address_unique" unique ("address");`);
    this.addSql(`alter table "mailbox" add constraint "mailbox_resource_key_unique" unique ("resource_key");`);
    this.addSql(
      `create table "access_token" ("id" varchar(40) not null, "kind" varchar(16) not null, "domain_id" varchar(40) not null, "mailbox_id" varchar(40) null, "name" varchar(200) not null, "token_prefix" varchar(32) not null, "token_hash" varchar(64) not null, "scopes" text[] not null, "created_source" varchar(32) not null, "parent_token_id" varchar(40) null, "expires_at" timestamptz(3) null, "disabled_at" timestamptz(3) null, "last_used_at" timestamptz(3) null, "last_used_remote_ip" varchar(64) null, "plaintext_cipher" text null, "reveal_until" timestamptz(3) null, "created_at" timestamptz(3) not null, primary key ("id"));`,
    );
    this.addSql(`create index "access_token_domain_id_index" on "access_token" ("domain_id");`);
    this.addSql(`create index "access_token_mailbox_id_index" on "access_token" ("mailbox_id");`);
    this.addSql(`alter table "access_token" add constraint "access_token_token_hash_unique" unique ("token_hash");`);
    this.addSql(
      `create table "mailbox_alias" ("id" varchar(40) not null, "mailbox_id" varchar(40) not null, "address" varchar(320) not null, "is_active" boolean not null default true, "created_at" timestamptz(3) not null, primary key ("id"));`,
    );
    this.addSql(`create index "mailbox_alias_mailbox_id_index" on "mailbox_alias" ("mailbox_id");`);
    this.addSql(`alter table "mailbox_alias" add constraint "mailbox_alias_address_unique" unique ("address");`);
    this.addSql(
      `create table "mailbox_event" ("mailbox_id" varchar(40) not null, "seq" bigint not null, "type" varchar(40) not null, "occurred_at" timestamptz(3) not null, "payload" jsonb not null, primary key ("mailbox_id", "seq"));`,
    );
    this.addSql(`create index "mailbox_event_occurred_idx" on "mailbox_event" ("occurred_at");`);
    this.addSql(
      `create table "sender_identity" ("id" varchar(40) not null, "mailbox_id" varchar(40) not null, "address" varchar(320) not null, "display_name" varchar(200) not null default '', "is_active" boolean not null default true, "created_at" timestamptz(3) not null, primary key ("id"));`,
    );
    this.addSql(`create index "sender_identity_address_index" on "sender_identity" ("address");`);
    this.addSql(
      `alter table "sender_identity" add constraint "sender_identity_mailbox_id_address_unique" unique ("mailbox_id", "address");`,
    );
    this.addSql(
      `create table "thread" ("id" varchar(40) not null, "mailbox_id" varchar(40) not null, "subject" text not null default '', "created_at" timestamptz(3) not null, "last_message_at" timestamptz(3) not null, primary key ("id"));`,
    );
    this.addSql(`create index "thread_mailbox_id_index" on "thread" ("mailbox_id");`);
    this.addSql(
      `create table "message" ("id" varchar(40) not null, "mailbox_id" varchar(40) not null, "thread_id" varchar(40) not null, "direction" varchar(16) not null, "subject" text not null default '', "from_address" varchar(320) not null, "from_display_name" varchar(200) not null default '', "to_addresses" text[] not null, "cc_addresses" text[] not null, "bcc_addresses" text[] not null, "mailbox_address" varchar(320) not null, "attachment_count" int not null default 0, "body_text" text null, "body_html" text null, "body_format" varchar(16) not null, "raw_blob_key" varchar(200) null, "internet_message_id" varchar(998) null, "in_reply_to_message_id" varchar(40) null, "references_header" text[] not null, "is_read" boolean not null default false, "read_at" timestamptz(3) null, "deleted_at" timestamptz(3) null, "delivery_status" varchar(16) null, "idempotency_key" varchar(200) null, "request_hash" varchar(64) null, "auth_results" jsonb null, "created_at" timestamptz(3) not null, "received_at" timestamptz(3) null, "sent_at" timestamptz(3) null, primary key ("id"));`,
    );
    this.addSql(
      `create index "message_list_idx" on "message" ("mailbox_id", "created_at" desc, "id" desc) where "deleted_at" is null;`,
    );
    this.addSql(
      `create index "message_list_dir_idx" on "message" ("mailbox_id", "direction", "created_at" desc, "id" desc) where "deleted_at" is null;`,
    );
    this.addSql(`create index "message_thread_idx" on "message" ("thread_id", "created_at");`);
    this.addSql(`create index "message_internet_id_idx" on "message" ("mailbox_id", "internet_message_id");`);
    this.addSql(
      `alter table "message" add constraint "message_idempotency_uq" unique ("mailbox_id", "idempotency_key");`,
    );
    this.addSql(
      `create table "outbox_job" ("id" varchar(40) not null, "message_id" varchar(40) not null, "mailbox_id" varchar(40) not null, "status" varchar(16) not null, "attempts" int not null default 0, "run_after" timestamptz(3) not null, "lease_until" timestamptz(3) null, "locked_by" varchar(100) null, "last_error" text null, "trace_context" varchar(200) null, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, primary key ("id"));`,
    );
    this.addSql(`alter table "outbox_job" add constraint "outbox_job_message_id_unique" unique ("message_id");`);
    this.addSql(`create index "outbox_job_mailbox_id_index" on "outbox_job" ("mailbox_id");`);
    this.addSql(`create index "outbox_job_due_idx" on "outbox_job" ("run_after") where "status" = 'pending';`);
    this.addSql(
      `create table "message_recipient" ("id" varchar(40) not null, "message_id" varchar(40) not null, "address" varchar(320) not null, "kind" varchar(8) not null, "status" varchar(16) not null, "remote_reply" text null, "attempts" int not null default 0, "updated_at" timestamptz(3) not null, "delivered_at" timestamptz(3) null, primary key ("id"));`,
    );
    this.addSql(`create index "message_recipient_message_id_index" on "message_recipient" ("message_id");`);
    this.addSql(
      `create table "attachment" ("id" varchar(40) not null, "mailbox_id" varchar(40) not null, "message_id" varchar(40) null, "filename" varchar(255) not null, "content_type" varchar(255) not null, "size_bytes" bigint not null, "sha256" varchar(64) not null, "blob_key" varchar(200) not null, "created_at" timestamptz(3) not null, primary key ("id"));`,
    );
    this.addSql(`create index "attachment_mailbox_id_index" on "attachment" ("mailbox_id");`);
    this.addSql(`create index "attachment_message_id_index" on "attachment" ("message_id");`);
    this.addSql(
      `alter table "mailbox" add constraint "mailbox_domain_id_foreign" foreign key ("domain_id") references "domain" ("id");`,
    );
    this.addSql(
      `alter table "access_token" add constraint "access_token_domain_id_foreign" foreign key ("domain_id") references "domain" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "access_token" add constraint "access_token_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "mailbox_alias" add constraint "mailbox_alias_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "mailbox_event" add constraint "mailbox_event_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "sender_identity" add constraint "sender_identity_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "thread" add constraint "thread_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "message" add constraint "message_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "message" add constraint "message_thread_id_foreign" foreign key ("thread_id") references "thread" ("id");`,
    );
    this.addSql(
      `alter table "outbox_job" add constraint "outbox_job_message_id_foreign" foreign key ("message_id") references "message" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "outbox_job" add constraint "outbox_job_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "message_recipient" add constraint "message_recipient_message_id_foreign" foreign key ("message_id") references "message" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "attachment" add constraint "attachment_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "attachment" add constraint "attachment_message_id_foreign" foreign key ("message_id") references "message" ("id") on delete cascade;`,
    );
  }
}
