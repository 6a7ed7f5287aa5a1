import { Migration } from '@mikro-orm/migrations';

/**
 * The PostgreSQL blob store streams (src/storage/blobs/pg-blob-store.ts): a blob's bytes are rows
 * of `blob_chunk`, each committed on its own, and the `blob` row is written last, so it marks the
 * blob complete. `blob.data` stays for blobs written before; new rows leave it null.
 */
export class Migration20270120000000BlobChunks extends Migration {
  override up(): void {
    this.addSql(
      `create table "blob_chunk" ("key" varchar(200) not null, "seq" int not null, "data" bytea not null, "created_at" timestamptz(3) not null default now(), primary key ("key", "seq"));`,
    );
    this.addSql(`alter table "blob" alter column "data" drop not null;`);
  }
}
