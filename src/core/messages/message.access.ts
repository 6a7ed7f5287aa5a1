import type { Database } from '../../storage/database.js';
import { resolveMailbox, visibilityOf, visibilityOfMailbox } from '../auth/access.js';
import type { Principal, Visibility } from '../auth/principal.js';

/**
 * Where a call by message or thread id looks. mailboxAddress is optional for both token kinds
 * here, because the id already names the object:
 * - given, it is resolved like everywhere else (invalid 400, a mailbox token naming another
 *   mailbox 400, a domain token naming an unknown or foreign mailbox 404) and the object must
 *   live in that mailbox;
 * - absent, a mailbox token sees its own mailbox and a domain token every enabled mailbox of
 *   its domain.
 * Anything outside is "not found", never "forbidden", so ids of other tenants reveal nothing.
 */
export async function targetVisibility(
  db: Database,
  principal: Principal,
  mailboxAddress: string | undefined,
): Promise<Visibility> {
  if (mailboxAddress) return visibilityOfMailbox(await resolveMailbox(db, principal, mailboxAddress));
  return visibilityOf(principal);
}
