import { ERRORS } from '../../core/base/errors.js';
import type { RouteSpec } from './route.js';

/** The envelope around `data` (the spec's EnvelopMessage). */
export const envelopeOf = (data: Record<string, unknown>) => ({
  type: 'object',
  required: ['data', 'code', 'errorCode', 'msg', 'errMsg', 'tid'],
  properties: {
    data,
    code: { type: 'integer', description: 'The HTTP status, repeated.' },
    errorCode: {
      type: ['string', 'null'],
      enum: [...Object.keys(ERRORS), null],
      description: 'Stable error code from the catalog (docs/api.md, "Errors"); null on success.',
    },
    msg: { type: ['string', 'null'], description: 'Reason phrase of the status.' },
    errMsg: { type: ['string', 'null'], description: 'Null on success; a sentence saying what went wrong on errors.' },
    tid: { type: 'string', description: 'W3C trace id of the request (also in the traceparent header).' },
  },
});

/** Error answers, each documented once under components.responses and referenced by the operations. */
export const ERROR_RESPONSES: Record<string, { status: number; description: string }> = {
  BadRequest: { status: 400, description: 'The input is not valid (shape, ids, cursor, address syntax).' },
  Unauthorized: { status: 401, description: 'Missing, malformed, unknown, disabled or expired token.' },
  Forbidden: {
    status: 403,
    description: 'The token lacks the scope, is the wrong kind, or does not govern that domain.',
  },
  NotFound: { status: 404, description: 'No such object visible to this token.' },
  Conflict: {
    status: 409,
    description: 'The object is in a state that forbids this (e.g. plaintext no longer revealable).',
  },
  PayloadTooLarge: { status: 413, description: 'The body is larger than the configured limit.' },
  UnsupportedMediaType: { status: 415, description: 'The body is not application/json (or the upload form).' },
  TooManyRequests: { status: 429, description: 'Rate limited or throttled; Retry-After says when to try again.' },
  ServiceUnavailable: { status: 503, description: 'Storage is unreachable; retry later.' },
};

/** Which error answers an operation can give, from what its declaration says it takes. */
export function errorResponsesOf(r: RouteSpec): string[] {
  const out = ['BadRequest'];
  if (r.auth === 'bearer') out.push('Unauthorized', 'Forbidden');
  if (r.auth === 'none') out.push('Unauthorized');
  if (r.path.includes(':') || r.query) out.push('NotFound');
  if (r.path.endsWith('/reveal') || r.idempotent || (r.method === 'POST' && r.path.endsWith('mailboxes')))
    out.push('Conflict');
  if (r.body) out.push('PayloadTooLarge', 'UnsupportedMediaType');
  if (r.method !== 'GET' || r.auth === 'none') out.push('TooManyRequests');
  out.push('ServiceUnavailable');
  return out;
}

/** Tags group the reference page; each route belongs to the first tag whose test matches. */
export const TAGS: { name: string; description: string; test: (r: RouteSpec) => boolean }[] = [
  { name: 'Authentication', description: 'Password login.', test: (r) => r.path.includes('/auth/') },
  {
    name: 'Drafts',
    description: 'Drafts kept until they are sent (through the send path) or deleted.',
    test: (r) => r.path.startsWith('/api/drafts'),
  },
  {
    name: 'Sending',
    description: 'Send, reply and upload attachments; all honour Idempotency-Key where stated.',
    test: (r) => /\/send$|\/reply$|\/attachments$/.test(r.path),
  },
  {
    name: 'Events',
    description: 'The event log and long-polling for new mail.',
    test: (r) => /events|wait/.test(r.path),
  },
  { name: 'Tokens', description: 'Access tokens of a mailbox.', test: (r) => r.path.includes('access-tokens') },
  {
    name: 'Domain',
    description: 'Domain-token administration: mailboxes, passwords, DKIM.',
    test: (r) => r.path.startsWith('/api/domain') || r.path === '/api/mailboxes',
  },
  { name: 'Messages', description: 'Read, list, thread, mark and delete messages.', test: () => true },
];

/** `postApiMessagesSend` → `PostApiMessagesSend`: the stem of an operation's component names. */
export const pascal = (operationId: string): string => operationId.charAt(0).toUpperCase() + operationId.slice(1);
