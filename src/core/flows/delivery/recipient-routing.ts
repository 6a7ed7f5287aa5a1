import { splitAddress } from '../../base/address.js';
import type { Database } from '../../../storage/database.js';
import { deliverableMailbox, enabledDomain } from './recipient-routing.store.js';

/** Where a recipient address goes. */
export type Route =
  /**
   * `full`: the mailbox is already at its storage quota (an early refusal; the commit decides);
   * `limited`: it has a quota at all.
   */
  | { kind: 'local'; mailboxId: string; full: boolean; limited: boolean }
  /** A hosted, active domain without such a mailbox or active alias: undeliverable here. */
  | { kind: 'unknown-local' }
  | { kind: 'external' };

/**
 * Routes one address: a hosted mailbox's primary address or active alias is delivered locally
 * (docs/contract.md, SMTP Delivery); other addresses of a hosted domain would only bounce back from our
 * own MX, so they fail now; everything else needs the external transport.
 */
export async function routeRecipient(db: Database, address: string, now: Date): Promise<Route> {
  const hit = await deliverableMailbox(db, address, now);
  if (hit) return { kind: 'local', mailboxId: hit.id, full: hit.full, limited: hit.limited };
  const domain = await enabledDomain(db, splitAddress(address).domain);
  return domain ? { kind: 'unknown-local' } : { kind: 'external' };
}
