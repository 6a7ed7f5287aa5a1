import addressparser from 'nodemailer/lib/addressparser';
import { AppError } from '../../base/errors.js';
import { isAddress, normalizeAddress } from '../../base/address.js';

/** The author fields of a submitted message, each one parsed address. */
export interface AuthorFields {
  from: string;
  sender: string | null;
}

/**
 * The From and Sender fields of a message submitted on 587, checked as docs/contract.md ("Sender integrity
 * and inbound trust") requires before any identity is looked at: exactly one From field (RFC 5322
 * §3.6 allows one) holding exactly one mailbox that parses, and at most one Sender holding one
 * mailbox. A second From is how a relayed copy, DKIM-signed by us, shows a reader a different
 * author than the one checked; several From mailboxes would need a Sender (RFC 5322 §3.6.2), and
 * we allow one author only. Throws FROM_HEADER_INVALID (550 5.7.1).
 */
export function authorFields(headerLines: readonly { key: string; line: string }[]): AuthorFields {
  const values = (name: string) =>
    headerLines.filter((h) => h.key === name).map((h) => h.line.slice(h.line.indexOf(':') + 1).replace(/\r?\n/g, ''));
  const froms = values('from');
  if (froms.length !== 1)
    throw new AppError('FROM_HEADER_INVALID', `The message has ${froms.length} From fields; one is required.`);
  const from = single(froms[0]!, 'From');
  const senders = values('sender');
  if (senders.length > 1) throw new AppError('FROM_HEADER_INVALID', 'The message has more than one Sender field.');
  return { from, sender: senders.length ? single(senders[0]!, 'Sender') : null };
}

function single(value: string, field: string): string {
  const list = addressparser(value, { flatten: true });
  if (list.length !== 1)
    throw new AppError(
      'FROM_HEADER_INVALID',
      `The ${field} field must hold exactly one address (it has ${list.length}).`,
    );
  const address = normalizeAddress(list[0]!.address);
  if (!isAddress(address))
    throw new AppError('FROM_HEADER_INVALID', `The ${field} field does not hold a valid address.`);
  return address;
}

/** Every address of every From field (groups flattened), lower-case: what a hosted-domain check must see. */
export function allFromAddresses(headerLines: readonly { key: string; line: string }[]): string[] {
  return headerLines
    .filter((h) => h.key === 'from')
    .flatMap((h) => addressparser(h.line.slice(h.line.indexOf(':') + 1).replace(/\r?\n/g, ''), { flatten: true }))
    .map((a) => normalizeAddress(a.address))
    .filter(isAddress);
}

/** The domains of every From address (lower-case, each once): what the hosted-From rule looks up. */
export function allFromDomains(headerLines: readonly { key: string; line: string }[]): string[] {
  return [...new Set(allFromAddresses(headerLines).map((a) => a.slice(a.lastIndexOf('@') + 1)))];
}
