import { Migration } from '@mikro-orm/migrations';

/**
 * Cache of extracted attachment text (docs/api.md, "Attachment text"): extracted once, on first
 * request, then served from here. A failure is cached too, so a hostile file costs its time limit
 * once, not on every request.
 */
export class Migration20270110000200AttachmentText extends Migration {
  override up(): void {
    this.addSql(
      `create table "attachment_text" ("attachment_id" varchar(40) not null, "status" varchar(16) not null, "text" text null, "truncated" boolean not null default false, "error_code" varchar(40) null, "error_detail" text null, "created_at" timestamptz(3) not null, primary key ("attachment_id"));`,
    );
    this.addSql(
      `alter table "attachment_text" add constraint "attachment_text_attachment_id_foreign" foreign key ("attachment_id") references "attachment" ("id") on delete cascade;`,
    );
  }
}
