import { createHash } from 'node:crypto';
import { AppError } from '../../base/errors.js';
import type { Database } from '../../../storage/database.js';
import type { SendAccepted } from './send.schemas.js';
import type { Visibility } from '../../access/principal.js';
import {
  messageByIdempotencyKey,
  messageByRequestHash,
  type IdempotentRow,
  type OutboundDraft,
} from './outbound.store.js';

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
    ...(schedule.sendAt !== undefined
      ? [{ sendAt: schedule.sendAt, cancelOnReply: schedule.cancelOnReply === true }]
      : []),
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

/**
 * Fingerprint of sending a stored draft: the draft itself, not its content, because a retry
 * comes after the accepted send removed the draft (docs/workflow.md, "Drafts"). A key first
 * used for another request, or for another draft, is a 409 as always.
 */
export function draftSendHash(draftId: string): string {
  return createHash('sha256')
    .update(JSON.stringify(['draft', draftId]))
    .digest('hex');
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
  return firstAnswer(row);
}

/**
 * The first answer to sending a draft under `key`, once the draft is gone: found by the key and
 * the draft's fingerprint in any mailbox the caller sees (a domain token may omit mailboxAddress).
 */
export async function replayDraftSend(
  db: Database,
  visibility: Visibility,
  key: string,
  draftId: string,
): Promise<SendAccepted | undefined> {
  const row = await messageByRequestHash(db, visibility, key, draftSendHash(draftId));
  return row ? firstAnswer(row) : undefined;
}

function firstAnswer(row: IdempotentRow): SendAccepted {
  const base = { messageId: row.id, threadId: row.thread_id, queuedAtTs: new Date(row.created_at).getTime() };
  // The first answer: a scheduled send was answered scheduled (whatever became of it since).
  if (row.send_at !== null) return { ...base, status: 'scheduled', sendAtTs: new Date(row.send_at).getTime() };
  // Held messages were answered pending_approval.
  return { ...base, status: row.approval_status === null ? 'queued' : 'pending_approval' };
}
