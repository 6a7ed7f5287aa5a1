import { Migration } from '@mikro-orm/migrations';

/**
 * The search index leads with the mailbox (btree_gin makes a varchar a GIN key): one index scan
 * yields only the searched mailbox's matches. With `gin (search_vector)` alone the planner ANDed
 * the word's bitmap with a bitmap of the whole mailbox, 0.6–0.96 s for a rare word in a 5 M-message
 * mailbox (docs/scaling.md, bench/scale/search-index.ts: 1.0 ms with this index). Same size. The
 * build holds a write lock on `message` for its duration (about 7 minutes at 10 M messages here).
 */
export class Migration20270126000000SearchByMailbox extends Migration {
  override up(): void {
    // Trusted since PostgreSQL 13: the database owner may create it; PGlite loads it (src/storage/orm.ts).
    this.addSql(`create extension if not exists btree_gin;`);
    this.addSql(`alter index if exists "message_search_idx" rename to "message_search_word_idx";`);
    this.addSql(`create index "message_search_idx" on "message" using gin ("mailbox_id", "search_vector");`);
    this.addSql(`drop index if exists "message_search_word_idx";`);
  }
}
