import { Migration } from '@mikro-orm/migrations';

/** The columns that hold a message's large values: bodies, raw blobs, search vectors, texts. */
const LARGE_COLUMNS: readonly [table: string, column: string][] = [
  ['message', 'body_text'],
  ['message', 'body_html'],
  ['message', 'search_vector'],
  ['message', 'extracted'],
  ['blob', 'data'],
  ['blob_chunk', 'data'],
  ['attachment_text', 'text'],
];

/**
 * Large values are compressed with lz4 instead of PostgreSQL's default pglz: for a 10 KB body and
 * its 10 KB raw blob, pglz cost ~85 µs of the server's CPU per row where lz4 cost ~7–11 µs, and
 * lz4's output was smaller (5 000 rows: 3.5 MB against 5.0 MB; docs/design/smtp-intake.md). It applies
 * to values written from now on; older ones stay as they are and read as before. A server built
 * without lz4 (PGlite) keeps pglz: the change is skipped there, not failed.
 */
export class Migration20270215000000Lz4Compression extends Migration {
  override up(): void {
    const alters = LARGE_COLUMNS.map(([t, c]) => `alter table "${t}" alter column "${c}" set compression lz4;`);
    // One block: on a server without lz4 the first statement raises and none is applied.
    this.addSql(`do $$ begin ${alters.join(' ')}
      exception when feature_not_supported then raise notice 'lz4 is not available here: large values stay pglz'; end $$;`);
  }
}
