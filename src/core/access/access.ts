import { AppError, notFound } from '../base/errors.js';
import { parseMailboxAddress } from '../base/address.js';
import type { Scope } from './scopes.js';
import type { MailboxRef, Principal, Visibility } from './principal.js';
import type { Database } from '../../storage/database.js';
import { enabledMailboxByAddress, enabledMailboxById, type MailboxRefRow } from './access.store.js';

export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.has(scope)) throw new AppError('SCOPE_MISSING', `This token lacks the ${scope} scope.`);
}

export function requireMailboxToken(
  principal: Principal,
): asserts principal is Principal & { mailboxId: string; mailboxAddress: string } {
  if (principal.kind !== 'mailbox')
    throw new AppError(
      'TOKEN_KIND_FORBIDDEN',
      'Only a mailbox token can manage its own tokens; use /api/domain routes with a domain token.',
    );
}

export function requireDomainToken(principal: Principal): void {
  if (principal.kind !== 'domain') throw new AppError('TOKEN_KIND_FORBIDDEN', 'This route needs a domain token.');
}

export const visibilityOf = (principal: Principal): Visibility =>
  principal.kind === 'mailbox'
    ? { kind: 'mailbox', mailboxId: principal.mailboxId! }
    : { kind: 'domain', domainId: principal.domainId };

export const visibilityOfMailbox = (mailbox: MailboxRef): Visibility => ({ kind: 'mailbox', mailboxId: mailbox.id });

const toRef = (r: MailboxRefRow): MailboxRef => ({
  id: r.id,
  address: r.address,
  domainId: r.domain_id,
  displayName: r.display_name,
  sendRateLimitPerMinute: r.send_rate_limit_per_minute,
});

/**
 * Resolves the mailbox a call acts on, by the spec's token table: a mailbox token acts on its
 * own mailbox (naming another is a 400); a domain token must name one of its domain's
 * mailboxes (missing is a 400, another domain's or unknown is a 404).
 */
export async function resolveMailbox(
  db: Database,
  principal: Principal,
  mailboxAddress: string | undefined | null,
): Promise<MailboxRef> {
  if (principal.kind === 'mailbox') {
    if (mailboxAddress !== undefined && mailboxAddress !== null && mailboxAddress !== '') {
      const address = parseMailboxAddress(mailboxAddress);
      if (address !== principal.mailboxAddress) throw new AppError('MAILBOX_ADDRESS_FORBIDDEN');
    }
    // authenticate() read the mailbox with the token and refused a disabled one.
    if (!principal.mailbox) throw new AppError('UNAUTHENTICATED');
    return principal.mailbox;
  }
  if (mailboxAddress === undefined || mailboxAddress === null || mailboxAddress === '')
    throw new AppError('MAILBOX_ADDRESS_REQUIRED');
  const address = parseMailboxAddress(mailboxAddress);
  const row = await enabledMailboxByAddress(db, principal.domainId, address);
  if (!row) throw notFound('Mailbox');
  return toRef(row);
}

/** An enabled mailbox by id inside its domain, for work done later in its name (a scheduled send). */
export async function enabledMailboxRef(db: Database, domainId: string, mailboxId: string): Promise<MailboxRef | null> {
  const row = await enabledMailboxById(db, domainId, mailboxId);
  return row ? toRef(row) : null;
}

/** A mailbox by id, visible only inside the domain token's own domain. */
export async function resolveDomainMailboxById(
  db: Database,
  principal: Principal,
  mailboxId: string,
): Promise<MailboxRef> {
  requireDomainToken(principal);
  const row = await enabledMailboxById(db, principal.domainId, mailboxId);
  if (!row) throw notFound('Mailbox');
  return toRef(row);
}
