import { Migration } from '@mikro-orm/migrations';

/**
 * Drafts (docs/workflow.md, "Drafts"): what a send takes, kept per mailbox until it is sent or
 * deleted. An upload a draft holds names it, so the storage sweeper leaves it past UPLOAD_TTL
 * while the draft exists; deleting the draft lets it expire as any unclaimed upload.
 */
export class Migration20270420000000Drafts extends Migration {
  override up(): void {
    this.addSql(
      `create table "draft" ("id" varchar(40) not null, "mailbox_id" varchar(40) not null, "to_addresses" text[] not null default '{}', "cc_addresses" text[] not null default '{}', "bcc_addresses" text[] not null default '{}', "subject" text null, "body_text" text null, "body_html" text null, "parent_message_id" varchar(40) null, "reply_all" boolean not null default false, "send_at" timestamptz(3) null, "cancel_on_reply" boolean not null default false, "created_by_token_id" varchar(40) null, "revision" int not null default 1, "created_at" timestamptz(3) not null, "updated_at" timestamptz(3) not null, primary key ("id"));`,
    );
    this.addSql(`create index "draft_list_idx" on "draft" ("mailbox_id", "created_at" desc, "id" desc);`);
    this.addSql(
      `alter table "draft" add constraint "draft_mailbox_id_foreign" foreign key ("mailbox_id") references "mailbox" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "attachment" add "draft_id" varchar(40) null;`);
    this.addSql(
      `alter table "attachment" add constraint "attachment_draft_id_foreign" foreign key ("draft_id") references "draft" ("id") on delete set null;`,
    );
    this.addSql(`create index "attachment_draft_id_index" on "attachment" ("draft_id");`);
  }
}
