import { splitAddress } from '../../base/address.js';
import type { Sql } from '../../../storage/database.js';
import { messagesByInternetIds } from './thread.store.js';

/** RFC 5322 §3.6.4 msg-id shape; anything else in a header is ignored for threading. */
const MSG_ID_RE = /^<[^<>\s]+@[^<>\s]+>$/;

/** The Message-ID we give an outbound message: `<msg_…@sender-domain>` (RFC 5322 §3.6.4). */
export const internetMessageIdFor = (messageId: string, mailboxAddress: string): string =>
  `<${messageId}@${splitAddress(mailboxAddress).domain}>`;

/** Keeps well-formed msg-ids only, trimmed and in order, without duplicates. */
export function cleanMessageIds(ids: readonly (string | null | undefined)[]): string[] {
  const out: string[] = [];
  for (const raw of ids) {
    const id = raw?.trim();
    if (id && id.length <= 998 && MSG_ID_RE.test(id) && !out.includes(id)) out.push(id);
  }
  return out;
}

/**
 * References of a reply: the parent's References followed by the parent's Message-ID
 * (RFC 5322 §3.6.4). The last element is therefore always the In-Reply-To id, which is how the
 * MIME builder recovers In-Reply-To (the row keeps the parent's internal id, not its msg-id).
 */
export function replyReferences(parent: { references: readonly string[]; internetMessageId: string | null }): string[] {
  const refs = cleanMessageIds(parent.references);
  if (parent.internetMessageId)
    return cleanMessageIds([...refs.filter((r) => r !== parent.internetMessageId), parent.internetMessageId]);
  return refs;
}

/**
 * Stored References of an inbound message: References as sent, else In-Reply-To alone (the
 * RFC 5322 §3.6.4 fallback), with In-Reply-To appended when a sender forgot it.
 */
export function inboundReferences(inReplyTo: string | null | undefined, references: readonly string[]): string[] {
  const refs = cleanMessageIds(references);
  const parent = cleanMessageIds([inReplyTo])[0];
  if (parent && refs[refs.length - 1] !== parent) return cleanMessageIds([...refs.filter((r) => r !== parent), parent]);
  return refs;
}

// "Re:", "RE :", "Re[2]:", "Aw:", "Sv:" … the reply prefixes mail clients commonly stack.
const REPLY_PREFIX_RE = /^\s*(re|aw|sv|antw|vs)\s*(\[\d+\])?\s*:\s*/i;

/** The subject with every leading reply prefix removed. */
export function baseSubject(subject: string): string {
  let s = subject;
  while (REPLY_PREFIX_RE.test(s)) s = s.replace(REPLY_PREFIX_RE, '');
  return s.trim();
}

/** Default subject of a reply: exactly one "Re: " in front of the parent's base subject. */
export const replySubject = (parentSubject: string): string => `Re: ${baseSubject(parentSubject)}`;

/** The message of `mailboxId` a new message replies to, found by its msg-ids, nearest first. */
export async function findParentByMessageIds(
  trx: Sql,
  mailboxId: string,
  ids: readonly string[],
): Promise<{ id: string; threadId: string; internetMessageId: string } | undefined> {
  if (ids.length === 0) return undefined;
  const rows = await messagesByInternetIds(trx, mailboxId, ids);
  // The last id in References / In-Reply-To is the direct parent; earlier ones are ancestors.
  for (const id of [...ids].reverse()) {
    const hit = rows.find((r) => r.internet_message_id === id);
    if (hit) return { id: hit.id, threadId: hit.thread_id, internetMessageId: hit.internet_message_id };
  }
  return undefined;
}
