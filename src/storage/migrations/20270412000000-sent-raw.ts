import { Migration } from '@mikro-orm/migrations';

/**
 * The RFC 5322 source of an outbound message as it left (DKIM-signed), stored once by the
 * delivery worker. Kept apart from raw_blob_key, which holds what a 587 client submitted and is
 * the input every delivery attempt signs afresh. Indexed for the storage sweeper's lookups.
 */
export class Migration20270412000000SentRaw extends Migration {
  override up(): void {
    this.addSql(`alter table "message" add column "sent_raw_blob_key" varchar(200) null;`);
    this.addSql(
      `create index "message_sent_raw_blob_key_idx" on "message" ("sent_raw_blob_key") where "sent_raw_blob_key" is not null;`,
    );
  }
}
