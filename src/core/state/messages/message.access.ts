import type { Database } from '../../../storage/database.js';
import { AppError, notFound } from '../../base/errors.js';
import { resolveMailbox, visibilityOf, visibilityOfMailbox } from '../../access/access.js';
import { messageMailboxId } from './message.store.js';
import type { Principal, Visibility } from '../../access/principal.js';

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

/**
 * A write on one message that names its mailbox (docs/contract.md, "Domain tokens on a mailbox's
 * objects"): the name is resolved like everywhere else, and it must be the message's own mailbox,
 * else 400 TARGET_MAILBOX_MISMATCH; a message the caller cannot see stays a 404. The HTTP route
 * layer runs it for every route declaring a `target`, so no route checks it on its own.
 */
export async function assertTargetMailbox(
  db: Database,
  principal: Principal,
  messageId: string,
  mailboxAddress: string | undefined,
): Promise<void> {
  if (mailboxAddress === undefined || mailboxAddress === '') return;
  const named = await resolveMailbox(db, principal, mailboxAddress);
  const owner = await messageMailboxId(db.db, visibilityOf(principal), messageId);
  if (owner === undefined) throw notFound('Message');
  if (owner !== named.id) throw new AppError('TARGET_MAILBOX_MISMATCH');
}
