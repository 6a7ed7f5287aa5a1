import { createHash } from 'node:crypto';
import { AppError } from '../../base/errors.js';
import type { Database } from '../../../storage/database.js';
import type { SendAccepted } from './send.schemas.js';
import { messageByIdempotencyKey, type OutboundDraft } from './outbound.store.js';

/** When a request asked to be sent (scheduled sends): part of what the request is. */
export interface RequestSchedule {
  sendAt?: number | undefined;
  cancelOnReply?: boolean | undefined;
}

/**
 * Fingerprint of a normalized request: after parsing, so `"a@x"` and `["A@x"]` are the same
 * request, and with the parent id, so a send and a reply never share a key by accident. A
 * different `sendAt` (or `cancelOnReply` with it) is a different request, like any other field.
 */
export function requestHash(draft: OutboundDraft, schedule: RequestSchedule = {}): string {
  const canonical = JSON.stringify([
    draft.parent?.id ?? null,
    draft.to,
    draft.cc,
    draft.bcc,
    draft.subject,
    draft.bodyText,
    draft.bodyHtml,
    [...draft.attachmentIds].sort(),
    // Only forwards carry it, so the fingerprint of every other request stays what it was.
    ...(draft.forwardedAttachments?.length ? [draft.forwardedAttachments.map((a) => a.blobKey)] : []),
    draft.internetMessageId ?? null,
    draft.fromAddress ?? null,
    // Only scheduled requests carry it, so the fingerprint of a request sent at once stays what it was.
    ...(schedule.sendAt !== undefined ? [{ sendAt: schedule.sendAt, cancelOnReply: schedule.cancelOnReply === true }] : []),
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

/**
 * The first result of a key, if the mailbox already used it: the same request gets it again;
 * a different request under the same key is a 409 (the key is never silently reused).
 */
export async function replayIdempotent(
  db: Database,
  mailboxId: string,
  key: string,
  hash: string,
): Promise<SendAccepted | undefined> {
  const row = await messageByIdempotencyKey(db, mailboxId, key);
  if (!row) return undefined;
  if (row.request_hash !== hash) throw new AppError('IDEMPOTENCY_CONFLICT');
  const base = { messageId: row.id, threadId: row.thread_id, queuedAtTs: new Date(row.created_at).getTime() };
  // The first answer: a scheduled send was answered scheduled (whatever became of it since).
  if (row.send_at !== null) return { ...base, status: 'scheduled', sendAtTs: new Date(row.send_at).getTime() };
  // Held messages were answered pending_approval.
  return { ...base, status: row.approval_status === null ? 'queued' : 'pending_approval' };
}
