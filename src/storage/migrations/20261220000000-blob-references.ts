import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes for the storage sweeper (core/housekeeping/storage-sweeper.ts): "does any row name this
 * blob" is one index probe per column, and expired unclaimed uploads are a range scan.
 */
export class Migration20261220000000BlobReferences extends Migration {
  override up(): void {
    this.addSql(
      `create index "message_raw_blob_key_idx" on "message" ("raw_blob_key") where "raw_blob_key" is not null;`,
    );
    this.addSql(`create index "attachment_blob_key_idx" on "attachment" ("blob_key");`);
    this.addSql(`create index "attachment_unclaimed_idx" on "attachment" ("created_at") where "message_id" is null;`);
  }
}
