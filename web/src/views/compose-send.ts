import { api } from '../api';
import { mailboxParam } from '../session';
import type { ComposeMode } from './compose-prefill';
import { split } from './compose-recipients';

/** The compose form at Send: its fields, what the mode filled in first, the uploads made. */
export interface Outgoing {
  mode: ComposeMode;
  parentId: string | null;
  to: string;
  cc: string;
  subject: string;
  body: string;
  /** To and subject as the mode filled them in. */
  start: { to: string; subject: string };
  attachmentIds: string[];
  idempotencyKey: string;
}

/**
 * One POST for the mode: send, reply (`replyAll` for reply all: the server adds the Cc) or
 * forward (the server adds the original and its attachments). To and subject of a reply or
 * forward go only when changed, so the server's own choice stands otherwise.
 */
export function postMessage(o: Outgoing): Promise<{ messageId: string }> {
  const headers = { 'Idempotency-Key': o.idempotencyKey };
  const common = { ccAddresses: split(o.cc), attachmentIds: o.attachmentIds, ...mailboxParam() };
  const changed = {
    ...(o.to !== o.start.to ? { toAddress: split(o.to) } : {}),
    ...(o.subject !== o.start.subject ? { subject: o.subject } : {}),
  };
  const parent = o.parentId ? `/api/messages/${encodeURIComponent(o.parentId)}` : null;
  if (parent && o.mode === 'forward')
    return api('POST', `${parent}/forward`, {
      body: { ...common, toAddress: split(o.to), ...changed, ...(o.body.trim() ? { bodyText: o.body } : {}) },
      headers,
    });
  if (parent && (o.mode === 'reply' || o.mode === 'replyAll'))
    return api('POST', `${parent}/reply`, {
      body: { ...common, ...changed, bodyText: o.body, ...(o.mode === 'replyAll' ? { replyAll: true } : {}) },
      headers,
    });
  return api('POST', '/api/messages/send', {
    body: { ...common, subject: o.subject, bodyText: o.body, toAddress: split(o.to) },
    headers,
  });
}
