import { Migration } from '@mikro-orm/migrations';

/**
 * Inbound screening (docs/screening.md): the score and signals found at ingest, and whether the
 * mailbox policy's holdAtScore keeps the message out of agent reads until a person releases it.
 * Null screening: outbound mail and mail stored before screening existed. message_held_idx
 * serves `?screening=held` and the held count of a list page; the list indexes leave held mail
 * out, so a page stays one index range scan without a filter.
 */
export class Migration20270403000000MessageScreening extends Migration {
  override up(): void {
    this.addSql(`alter table "message" add column "screening" jsonb null;`);
    this.addSql(`alter table "message" add column "screening_held" boolean not null default false;`);
    this.addSql(
      `create index "message_held_idx" on "message" ("mailbox_id", "created_at" desc, "id" desc) where "screening_held" and "deleted_at" is null;`,
    );
    this.addSql(`drop index if exists "message_list_idx";`);
    this.addSql(
      `create index "message_list_idx" on "message" ("mailbox_id", "created_at" desc, "id" desc) where "deleted_at" is null and not "screening_held";`,
    );
    this.addSql(`drop index if exists "message_list_dir_idx";`);
    this.addSql(
      `create index "message_list_dir_idx" on "message" ("mailbox_id", "direction", "created_at" desc, "id" desc) where "deleted_at" is null and not "screening_held";`,
    );
  }
}
