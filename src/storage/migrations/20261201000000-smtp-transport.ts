import { Migration } from '@mikro-orm/migrations';

/** Mail transport: per-domain DKIM keys (entity DkimKeyEntity). */
export class Migration20261201000000SmtpTransport extends Migration {
  override up(): void {
    this.addSql(
      `create table "dkim_key" ("domain_id" varchar(40) not null, "selector" varchar(63) not null, "algorithm" varchar(16) not null, "private_key_cipher" text not null, "public_key" text not null, "created_at" timestamptz(3) not null, primary key ("domain_id"));`,
    );
    this.addSql(
      `alter table "dkim_key" add constraint "dkim_key_domain_id_foreign" foreign key ("domain_id") references "domain" ("id") on delete cascade;`,
    );
  }
}
