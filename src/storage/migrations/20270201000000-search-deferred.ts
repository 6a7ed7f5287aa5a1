import { Migration } from '@mikro-orm/migrations';

/**
 * The search vector is no longer computed by the INSERT that stores a message: to_tsvector of a
 * 10 KB body plus its GIN entries were about 2 of the 3.5 ms PostgreSQL spent on that INSERT
 * (bench/smtp, pg_stat_statements), the largest cost of SMTP intake. The column becomes a plain
 * one that the worker's search indexer fills, and a search first indexes whatever of its mailbox
 * is still waiting (src/core/state/search/search-index.store.ts), so results stay complete. DROP EXPRESSION
 * keeps every stored vector; the partial index finds the waiting rows.
 */
export class Migration20270201000000SearchDeferred extends Migration {
  override up(): void {
    // The one definition of a message's search vector, used by the indexer and by bulk loaders.
    this.addSql(`create or replace function message_search_vector(subject text, body_text text, body_html text)
      returns tsvector language sql immutable parallel safe as $$
        select setweight(to_tsvector('simple'::regconfig, coalesce(subject, '')), 'A')
          || setweight(to_tsvector('simple'::regconfig, left(coalesce(body_text, body_html, ''), 100000)), 'B')
      $$;`);
    this.addSql(`alter table "message" alter column "search_vector" drop expression;`);
    this.addSql(`create index "message_search_pending_idx" on "message" ("mailbox_id") where "search_vector" is null;`);
  }
}
