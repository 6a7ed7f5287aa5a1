import { Migration } from '@mikro-orm/migrations';

/**
 * Per-mailbox storage quota (docs/api.md, "Storage quota"). `mailbox.storage_used_bytes` is what
 * the mailbox's live messages occupy (each message's `stored_bytes`: raw message, bodies and
 * attachments), charged in the transaction that inserts the message and released when it is
 * deleted. `mailbox.storage_quota_bytes` null falls back to the domain's
 * `default_storage_quota_bytes`, null there to STORAGE_QUOTA_DEFAULT_BYTES (unset: unlimited).
 * Existing messages are backfilled with their bodies and attachments (their raw size is unknown
 * to the database for the file store, so it is not counted).
 */
export class Migration20270125000000StorageQuota extends Migration {
  override up(): void {
    this.addSql(`alter table "domain" add column "default_storage_quota_bytes" bigint null;`);
    this.addSql(
      `alter table "mailbox" add column "storage_used_bytes" bigint not null default 0, add column "storage_quota_bytes" bigint null;`,
    );
    this.addSql(`alter table "message" add column "stored_bytes" bigint not null default 0;`);
    this.addSql(
      `update "message" m set "stored_bytes" = coalesce(octet_length(m."body_text"), 0) + coalesce(octet_length(m."body_html"), 0)
        + coalesce((select sum(a."size_bytes") from "attachment" a where a."message_id" = m."id"), 0);`,
    );
    this.addSql(
      `update "mailbox" b set "storage_used_bytes" = coalesce((select sum(m."stored_bytes") from "message" m
        where m."mailbox_id" = b."id" and m."deleted_at" is null), 0);`,
    );
  }
}
