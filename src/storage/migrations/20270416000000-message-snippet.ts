import { Migration } from '@mikro-orm/migrations';

/**
 * The list's snippet, stored when a message is written (state/messages/snippet.ts), so a list page
 * reads no bodies. Rows written before stay null and have theirs computed from the body's start
 * when listed (SNIPPET_COLUMNS): no rewrite of the table.
 */
export class Migration20270416000000MessageSnippet extends Migration {
  override up(): void {
    this.addSql(`alter table "message" add column "snippet" varchar(200) null;`);
  }
}
