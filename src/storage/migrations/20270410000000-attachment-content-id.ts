import { Migration } from '@mikro-orm/migrations';

/**
 * An attachment's Content-ID (without its angle brackets) and its disposition, so `cid:`
 * references in an HTML body resolve to the attachment they name (RFC 2392). Rows written before
 * read as attachments without a Content-ID.
 */
export class Migration20270410000000AttachmentContentId extends Migration {
  override up(): void {
    this.addSql(
      `alter table "attachment" add column "content_id" varchar(255) null, add column "disposition" varchar(10) not null default 'attachment';`,
    );
  }
}
