import { splitAddress } from '../address.js';
import { sql, type Database } from '../../storage/database.js';

/** Where a recipient address goes. */
export type Route =
  | { kind: 'local'; mailboxId: string }
  /** A hosted, active domain without such a mailbox or active alias: undeliverable here. */
  | { kind: 'unknown-local' }
  | { kind: 'external' };

/**
 * Routes one address: a hosted mailbox's primary address or active alias is delivered locally
 * (docs/contract.md, SMTP Delivery); other addresses of a hosted domain would only bounce back from our
 * own MX, so they fail now; everything else needs the external transport.
 */
export async function routeRecipient(db: Database, address: string): Promise<Route> {
  const hit = await db.one(sql<{ id: string }>`
    select m.id from mailbox m join domain d on d.id = m.domain_id
      where m.address = ${address} and m.disabled_at is null and d.disabled_at is null
    union all
    select m.id from mailbox_alias a join mailbox m on m.id = a.mailbox_id join domain d on d.id = m.domain_id
      where a.address = ${address} and a.is_active and m.disabled_at is null and d.disabled_at is null
    limit 1`);
  if (hit) return { kind: 'local', mailboxId: hit.id };
  const domain = await db.one(
    sql<{ id: string }>`select id from domain where name = ${splitAddress(address).domain} and disabled_at is null`,
  );
  return domain ? { kind: 'unknown-local' } : { kind: 'external' };
}
