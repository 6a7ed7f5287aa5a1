import { Migration } from '@mikro-orm/migrations';

/**
 * Full-text search over messages (docs/api.md, "Search"). The vector is a stored generated
 * column, so every writer (inbound store, local delivery, the send path, imports) maintains it
 * without code of its own. 'simple' configuration: no stemming and no stop words, the same for
 * every language a mailbox receives. Subject weighs A, body B (subject: matches use it).
 * HTML-only bodies are indexed as written: the default parser skips tags. Only the first
 * 100 000 characters of a body are indexed (tsvector has a 1 MB cap).
 */
export class Migration20270110000000MessageSearch extends Migration {
  override up(): void {
    this.addSql(
      `alter table "message" add column "search_vector" tsvector generated always as (setweight(to_tsvector('simple'::regconfig, coalesce("subject", '')), 'A') || setweight(to_tsvector('simple'::regconfig, left(coalesce("body_text", "body_html", ''), 100000)), 'B')) stored;`,
    );
    this.addSql(`create index "message_search_idx" on "message" using gin ("search_vector");`);
  }
}
