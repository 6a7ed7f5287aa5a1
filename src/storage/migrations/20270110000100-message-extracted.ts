import { Migration } from '@mikro-orm/migrations';

/**
 * What extraction found in an arriving message (docs/api.md, "Extraction"): one-time codes,
 * classified links and the reply without quoted history, written once at ingest so reading
 * costs nothing. Null for outbound mail and for mail stored before extraction existed.
 */
export class Migration20270110000100MessageExtracted extends Migration {
  override up(): void {
    this.addSql(`alter table "message" add column "extracted" jsonb null;`);
  }
}
