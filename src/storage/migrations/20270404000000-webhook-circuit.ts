import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook fairness (docs/webhooks.md): a circuit per webhook (`circuit_open_until`, set from its
 * run of `consecutive_failures`) keeps a failing endpoint out of the claim during its backoff, and
 * `webhook_delivery_leased_idx` finds the deliveries in flight, which the claim counts per domain.
 */
export class Migration20270404000000WebhookCircuit extends Migration {
  override up(): void {
    this.addSql(
      `alter table "webhook" add column "circuit_open_until" timestamptz(3) null, add column "consecutive_failures" int not null default 0;`,
    );
    this.addSql(
      `create index "webhook_delivery_leased_idx" on "webhook_delivery" ("webhook_id") where "status" = 'pending' and "lease_until" is not null;`,
    );
  }
}
