import { normalizeAddress } from '../../base/address.js';
import type { ParentMessage } from './reply-parent.js';

/** What the caller said about a reply's recipients. */
export interface ReplyRecipientInput {
  toAddress?: string[] | undefined;
  ccAddresses: string[];
  replyAll: boolean;
}

/**
 * To and Cc of a reply (docs/workflow.md, "Replies"). To: the caller's toAddress, else for
 * received mail its Reply-To or sender, for mail this mailbox sent its To. With replyAll, Cc adds
 * the parent's To and Cc (received mail) or Cc (sent mail). The mailbox's own addresses (primary,
 * aliases, sender identities) are never added by default, and no address is listed twice.
 */
export function replyRecipients(
  parent: Pick<ParentMessage, 'direction' | 'fromAddress' | 'toAddresses' | 'ccAddresses' | 'replyToAddresses'>,
  own: ReadonlySet<string>,
  input: ReplyRecipientInput,
): { to: string[]; cc: string[] } {
  const inbound = parent.direction === 'inbound';
  const defaultTo = inbound
    ? parent.replyToAddresses.length > 0
      ? parent.replyToAddresses
      : [parent.fromAddress]
    : parent.toAddresses;
  const isOwn = (a: string) => own.has(normalizeAddress(a));
  // Explicit addresses are kept as given; only defaults drop the mailbox's own addresses.
  const to = input.toAddress ?? distinct(defaultTo.filter((a) => !isOwn(a)));
  const listed = new Set(to.map(normalizeAddress));
  const others = input.replyAll
    ? (inbound ? [...parent.toAddresses, ...parent.ccAddresses] : parent.ccAddresses).filter((a) => !isOwn(a))
    : [];
  const cc = distinct([...others, ...input.ccAddresses]).filter((a) => !listed.has(normalizeAddress(a)));
  return { to, cc };
}

function distinct(addresses: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const a of addresses) {
    const key = normalizeAddress(a);
    if (!seen.has(key)) {
      seen.add(key);
      out.push(a);
    }
  }
  return out;
}
