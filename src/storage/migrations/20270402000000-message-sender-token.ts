import { Migration } from '@mikro-orm/migrations';

/**
 * The token that wrote an outbound message, so an approval by that token (or one it minted) is
 * refused (docs/trust.md, "Self-approval"). Held messages that predate the column take it from
 * their `held` audit entry, written in the same transaction as the message.
 */
export class Migration20270402000000MessageSenderToken extends Migration {
  override up(): void {
    this.addSql(`alter table "message" add column "sent_by_token_id" varchar(40) null;`);
    this.addSql(`update "message" m set "sent_by_token_id" = a.token_id from "audit_entry" a
      where a.message_id = m.id and a.decision = 'held' and m.approval_status = 'pending';`);
  }
}
