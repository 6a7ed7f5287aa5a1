import { splitAddress } from '../address.js';
import type { Database } from '../../storage/database.js';
import { deliverableMailbox, enabledDomain } from './recipient-routing.store.js';

/** Where a recipient address goes. */
export type Route =
  /**
   * `full`: the mailbox is already at its storage quota (an early refusal; the commit decides).
   * `senderDomainHosted`: whether the `senderDomain` asked about is hosted here (null: not asked).
   */
  | { kind: 'local'; mailboxId: string; full: boolean; senderDomainHosted: boolean | null }
  /** A hosted, active domain without such a mailbox or active alias: undeliverable here. */
  | { kind: 'unknown-local' }
  | { kind: 'external' };

/**
 * Routes one address: a hosted mailbox's primary address or active alias is delivered locally
 * (docs/contract.md, SMTP Delivery); other addresses of a hosted domain would only bounce back from our
 * own MX, so they fail now; everything else needs the external transport. `senderDomain`: also
 * ask whether that domain is hosted here, in the same statement (the MX's RCPT TO).
 */
export async function routeRecipient(db: Database, address: string, senderDomain?: string): Promise<Route> {
  const hit = await deliverableMailbox(db, address, senderDomain);
  if (hit) return { kind: 'local', mailboxId: hit.id, full: hit.full, senderDomainHosted: hit.sender_hosted ?? null };
  const domain = await enabledDomain(db, splitAddress(address).domain);
  return domain ? { kind: 'unknown-local' } : { kind: 'external' };
}
