import { Migration } from '@mikro-orm/migrations';

/**
 * Attachment text is claimed before it is extracted (docs/attachment-extraction.md): a row with
 * status `extracting` and the time by which its extraction must have ended (`deadline_at`). A row
 * still `extracting` past it belonged to a process that died mid-way (an out-of-memory kill), and
 * is recorded failed instead of being run again. `failure_reason` is the recorded reason of a
 * failure (`too-large-inflated`, `memory`, `interrupted`, …).
 */
export class Migration20270401000000AttachmentTextClaims extends Migration {
  override up(): void {
    this.addSql(
      `alter table "attachment_text" add column "deadline_at" timestamptz(3) null, add column "failure_reason" varchar(40) null;`,
    );
  }
}
