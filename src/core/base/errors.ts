/**
 * The error catalog: every failure a caller can see, declared once with a stable code
 * (docs/api.md, "Errors", lists each with its form on every channel; a test keeps that table,
 * this catalog and the channel mappers in step). Anything thrown becomes an entry through
 * `toAppError` (core/error-mapping.ts); each channel renders an entry in one place: HTTP the
 * envelope (`code` = `status`, `errorCode` = the key), SMTP the `smtp` reply, MCP a tool error,
 * Socket.IO `connect_error` / `subscription.closed` data. `{host}` in an SMTP reply is the
 * server's name (RFC 5321 §3.8: a 421 names the host closing the channel).
 */
export const ERRORS = {
  VALIDATION_FAILED: {
    status: 400,
    smtp: '501 5.5.4 Syntax error in parameters',
    message: 'The request is not valid.',
  },
  MAILBOX_ADDRESS_INVALID: {
    status: 400,
    smtp: '553 5.1.3 Bad destination mailbox address syntax',
    message: 'mailboxAddress is not a valid address.',
  },
  MAILBOX_ADDRESS_REQUIRED: {
    status: 400,
    smtp: '530 5.7.0 Authentication required',
    message: 'A domain token must name the mailbox with mailboxAddress.',
  },
  MAILBOX_ADDRESS_FORBIDDEN: {
    status: 400,
    smtp: '550 5.7.1 Sender not authorised',
    message: 'A mailbox token may act only for its own mailbox.',
  },
  TARGET_MAILBOX_MISMATCH: {
    status: 400,
    smtp: '550 5.7.1 Sender not authorised',
    message: 'mailboxAddress does not name the mailbox of this object.',
  },
  CURSOR_INVALID: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'cursor is invalid.' },
  REPLY_MAILBOX_MISMATCH: {
    status: 400,
    smtp: '550 5.7.1 Sender not authorised',
    message: 'mailboxAddress differs from the mailbox of the parent message.',
  },
  ATTACHMENT_FORM_INVALID: {
    status: 400,
    smtp: '501 5.5.4 Syntax error in parameters',
    message: 'The upload must be multipart/form-data with one file field.',
  },
  ATTACHMENT_UNKNOWN: {
    status: 400,
    smtp: '501 5.5.4 Syntax error in parameters',
    message: 'An attachmentId is unknown, already used, or belongs to another mailbox.',
  },
  SCOPE_NOT_GRANTABLE: {
    status: 400,
    smtp: '501 5.5.4 Syntax error in parameters',
    message: 'A new token may only carry scopes its creator holds.',
  },
  EXPIRY_INVALID: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'expiresAtTs is invalid.' },
  TOKEN_IN_URL: {
    status: 400,
    smtp: '501 5.5.4 Syntax error in parameters',
    message: 'Access tokens are never accepted in a URL; send it in the handshake auth or the Authorization header.',
  },
  JSON_INVALID: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'The body is not valid JSON.' },
  TEXT_INVALID: {
    status: 400,
    smtp: '501 5.5.4 Syntax error in parameters',
    message: 'Text may not contain NUL characters or unpaired surrogates.',
  },
  HTTP_MALFORMED: { status: 400, smtp: '500 5.5.2 Syntax error', message: 'The HTTP request is malformed.' },
  HTTP_HEADERS_TOO_LARGE: {
    status: 431,
    smtp: '500 5.5.2 Line too long',
    message: 'The request line or header section is too large.',
  },
  HTTP_REQUEST_TIMEOUT: {
    status: 408,
    smtp: '421 4.4.2 Timeout, closing connection',
    message: 'The request did not arrive in time.',
  },
  UNAUTHENTICATED: {
    status: 401,
    smtp: '535 5.7.8 Authentication credentials invalid',
    message: 'A valid access token is required.',
  },
  SMTP_PASSWORD_NOT_TOKEN: {
    status: 401,
    // Still 535 5.7.8 (RFC 4954): clients key on the code; the text tells the person what to type.
    smtp: '535 5.7.8 Authentication credentials invalid: the password must be an access token (mbxm_... or mbxd_...)',
    message: 'The SMTP password must be an access token, not the login password.',
  },
  LOGIN_FAILED: {
    status: 401,
    smtp: '535 5.7.8 Authentication credentials invalid',
    message: 'Address or password is wrong.',
  },
  SCOPE_MISSING: {
    status: 403,
    smtp: '535 5.7.8 Authentication credentials invalid',
    message: 'The token lacks a required scope.',
  },
  TOKEN_KIND_FORBIDDEN: {
    status: 403,
    smtp: '535 5.7.8 Authentication credentials invalid',
    message: 'This route needs a different kind of token.',
  },
  DOMAIN_FORBIDDEN: {
    status: 403,
    smtp: '535 5.7.8 Authentication credentials invalid',
    message: 'This token does not govern that domain.',
  },
  ORIGIN_FORBIDDEN: {
    status: 403,
    smtp: '550 5.7.1 Origin not allowed',
    message: 'This Origin may not open the real-time connection.',
  },
  NOT_FOUND: { status: 404, smtp: '550 5.1.1 Mailbox unavailable', message: 'Not found.' },
  ROUTE_NOT_FOUND: { status: 404, smtp: '500 5.5.1 Command unrecognised', message: 'No such route.' },
  METHOD_NOT_ALLOWED: {
    status: 405,
    smtp: '500 5.5.1 Command unrecognised',
    message: 'Method not allowed on this route.',
  },
  MAILBOX_EXISTS: {
    status: 409,
    smtp: '550 5.1.0 Address already exists',
    message: 'A mailbox with this address already exists.',
  },
  TOKEN_NOT_REVEALABLE: {
    status: 409,
    smtp: '550 5.7.1 Not revealable',
    message: 'The plaintext of this token is no longer available.',
  },
  IDEMPOTENCY_CONFLICT: {
    status: 409,
    smtp: '550 5.7.1 Idempotency key reused',
    message: 'This Idempotency-Key was used with a different request.',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    smtp: '552 5.3.4 Message size exceeds fixed limit',
    message: 'The request body is too large.',
  },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, smtp: '554 5.6.1 Media not supported', message: 'Unsupported Content-Type.' },
  RATE_LIMITED: {
    status: 429,
    smtp: '451 4.7.1 Rate limit exceeded, try again later',
    message: 'Send rate limit reached for this mailbox.',
  },
  LOGIN_THROTTLED: {
    status: 429,
    smtp: '454 4.7.0 Too many failed attempts, try again later',
    message: 'Too many failed logins for this address.',
  },
  LOGIN_BUSY: {
    status: 429,
    smtp: '454 4.7.0 Too many password checks in progress, try again later',
    message: 'Too many password checks are in progress for this client address; try again in a second.',
  },
  TOO_MANY_SOCKETS: {
    status: 429,
    smtp: '451 4.7.1 Too many connections for this token, try again later',
    message: 'This token already holds MAX_SOCKETS_PER_TOKEN real-time connections; close one first.',
  },
  TOO_MANY_WAITS: {
    status: 429,
    smtp: '451 4.7.1 Too many waits for this token, try again later',
    message: 'This token already holds MAX_WAITS_PER_TOKEN long-polls (wait, wait_for_message); let one finish first.',
  },
  TOO_MANY_EVENT_STREAMS: {
    status: 429,
    smtp: '451 4.7.1 Too many event streams for this token, try again later',
    message: 'This token already holds MAX_EVENT_STREAMS_PER_TOKEN MCP events/stream requests open; close one first.',
  },
  TOO_MANY_REPLAYS: {
    status: 429,
    smtp: '451 4.7.1 Too many replays for this token, try again later',
    message:
      'This token already has MAX_REPLAYS_PER_TOKEN real-time replays (lastEventId) in flight; let one finish first.',
  },
  UPLOADS_PENDING_LIMIT: {
    status: 429,
    smtp: '452 4.3.1 Too many unclaimed uploads, try again later',
    message:
      'This mailbox already holds MAX_PENDING_UPLOADS_PER_MAILBOX unclaimed uploads or MAX_PENDING_UPLOAD_BYTES_PER_MAILBOX bytes of them; send or let them expire first.',
  },
  QUOTA_EXCEEDED: {
    status: 413,
    smtp: '552 5.2.2 Mailbox full',
    message: 'The storage quota of this mailbox is reached; delete messages or ask for a larger quota.',
  },
  AUTH_THROTTLED: {
    status: 429,
    smtp: '454 4.7.0 Too many failed authentication attempts, try again later',
    message: 'Too many failed authentication attempts from this client address.',
  },
  // SMTP transport (RFC 5321 reply codes, RFC 3463 enhanced codes; HTTP statuses for completeness).
  AUTH_REQUIRED: {
    status: 401,
    smtp: '530 5.7.0 Authentication required',
    message: 'Authenticate first (RFC 4954 §6).',
  },
  AUTH_UNAVAILABLE: {
    status: 503,
    smtp: '454 4.7.0 Temporary authentication failure',
    message: 'Credentials cannot be checked right now (RFC 4954 §6).',
  },
  SENDER_NOT_IDENTITY: {
    status: 403,
    smtp: '550 5.7.1 Sender is not an active identity of the authenticated mailbox',
    message: 'MAIL FROM and the From header must be an active sender identity of the mailbox (RFC 3463 X.7.1).',
  },
  FROM_HEADER_INVALID: {
    status: 400,
    smtp: '550 5.7.1 One From field with one valid address is required',
    message: 'The message needs exactly one From field holding exactly one valid address, and at most one Sender.',
  },
  HOSTED_SENDER_UNSIGNED: {
    status: 403,
    smtp: '550 5.7.1 Mail from a domain hosted here must carry its DKIM signature',
    message: 'The From domain is hosted here, and the message does not carry a valid DKIM signature of it.',
  },
  RELAY_DENIED: {
    status: 403,
    smtp: '550 5.7.1 Relaying denied',
    message: 'This server accepts mail only for its hosted domains (RFC 5321 §3.6.2).',
  },
  MAILBOX_UNKNOWN: {
    status: 404,
    smtp: '550 5.1.1 No such user here',
    message: 'No mailbox or active alias has this address (RFC 3463 X.1.1).',
  },
  TOO_MANY_RECIPIENTS: {
    status: 400,
    smtp: '452 4.5.3 Too many recipients',
    message: 'The recipient limit of one transaction is reached (RFC 5321 §4.5.3.1.10).',
  },
  TOO_MANY_CONNECTIONS: {
    status: 429,
    smtp: '421 4.7.0 Too many connections, try again later',
    message: 'Too many concurrent SMTP connections (RFC 5321 §3.8).',
  },
  BARE_LINE_ENDING: {
    status: 400,
    smtp: '554 5.6.0 Bare CR or LF in message data',
    message: 'CR and LF may only appear together as CRLF (RFC 5321 §2.3.8); refused against SMTP smuggling.',
  },
  LINE_TOO_LONG: {
    status: 400,
    smtp: '550 5.6.0 Message has a line longer than 998 octets',
    message: 'A line of a message may have at most 998 octets before its CRLF (RFC 5322 §2.1.1).',
  },
  UNSUPPORTED_PARAMETER: {
    status: 400,
    smtp: '555 5.5.4 MAIL FROM or RCPT TO parameter not recognized or not implemented',
    message: 'A MAIL or RCPT parameter that this server does not advertise (RFC 5321 §4.1.1.11).',
  },
  UTF8_ADDRESS_WITHOUT_SMTPUTF8: {
    status: 400,
    smtp: '553 5.6.7 Internationalized address requires the SMTPUTF8 parameter',
    message: 'An address with non-ASCII characters needs MAIL FROM … SMTPUTF8 (RFC 6531 §3.4).',
  },
  HEADER_LIMIT: {
    status: 413,
    smtp: '552 5.3.4 Message header too large or too many header fields',
    message: 'The message header exceeds the size or field-count limit.',
  },
  MIME_LIMIT: {
    status: 400,
    smtp: '554 5.6.0 MIME structure exceeds limits',
    message: 'The message has too many parts, too deep a nesting or too large part headers.',
  },
  STARTTLS_REQUIRED: {
    status: 426,
    smtp: '530 5.7.0 Must issue a STARTTLS command first',
    message: 'AUTH is offered only after STARTTLS (RFC 3207 §4, RFC 4954 §4).',
  },
  COMMAND_TOO_LONG: {
    status: 400,
    smtp: '500 5.5.2 Line too long',
    message: 'A command line is at most 512 octets with its CRLF (RFC 5321 §4.5.3.1.4).',
  },
  SESSION_TIMEOUT: {
    status: 408,
    smtp: '421 4.4.2 {host} Session time limit exceeded, closing connection',
    message: 'The SMTP session lasted longer than SMTP_SESSION_TIMEOUT (RFC 3463 X.4.2).',
  },
  SHUTTING_DOWN: {
    status: 503,
    smtp: '421 4.3.2 {host} Service shutting down, try again later',
    message: 'The server is shutting down; try again (RFC 3463 X.3.2).',
  },
  // Real-time (Socket.IO) server-side closes, sent as `subscription.closed`.
  ACCESS_REVOKED: {
    status: 401,
    smtp: '530 5.7.0 Authentication required',
    message: 'The access token was disabled, deleted or expired, or the mailbox was disabled.',
  },
  EVENT_LOG_UNAVAILABLE: {
    status: 503,
    smtp: '451 4.3.0 Temporary storage failure, try again later',
    message: 'The event log is unavailable; reconnect with lastEventId.',
  },
  // Outbound policy (docs/api.md, "Outbound policy"): errMsg names the rule and its source.
  POLICY_NOT_WITHIN_PARENT: {
    status: 400,
    smtp: '501 5.5.4 Syntax error in parameters',
    message: "A new token's policy must lie within the policy of the token creating it.",
  },
  POLICY_RECIPIENT_REFUSED: {
    status: 403,
    smtp: '550 5.7.1 Recipient refused by the outbound policy of this mailbox',
    message: 'The outbound policy refuses this recipient.',
  },
  POLICY_LIMIT_EXCEEDED: {
    status: 403,
    smtp: '550 5.7.1 Recipient limit of the outbound policy reached',
    message: 'The outbound policy limits how many (new) recipients a message may have.',
  },
  AUTO_REPLY_REFUSED: {
    status: 403,
    smtp: '550 5.7.1 Replies to automatic or bulk mail are refused (RFC 3834)',
    message: 'The loop guard refuses a reply to an automatic answer or bulk mail (RFC 3834 §2).',
  },
  AUTO_REPLY_LIMITED: {
    status: 429,
    smtp: '451 4.7.1 Reply budget for this counterparty reached, try again later',
    message: 'Too many replies to this counterparty in the last hour (loop guard).',
  },
  APPROVAL_NOT_PENDING: {
    status: 409,
    smtp: '550 5.7.1 Message is not awaiting approval',
    message: 'This message was never held for approval.',
  },
  SCHEDULE_NOT_CANCELLABLE: {
    status: 409,
    smtp: '550 5.7.1 Message is not scheduled',
    message: 'This message was not scheduled, or it has already left.',
  },
  DRAFT_CHANGED: {
    status: 409,
    smtp: '550 5.7.1 Draft changed while it was being sent',
    message: 'The draft changed while it was being sent; read it again, then send it.',
  },
  APPROVAL_CONFLICT: {
    status: 409,
    smtp: '550 5.7.1 Approval already decided',
    message: 'Another decision on this message came first.',
  },
  APPROVAL_SELF_FORBIDDEN: {
    status: 403,
    smtp: '550 5.7.1 A sender may not approve its own message',
    message: 'The token that made a held send, or a token it minted, may not approve or reject it.',
  },
  // Approval links (docs/workflow.md, "Approval links"): the one-time credential mailed to an approver.
  APPROVAL_LINK_INVALID: {
    status: 404,
    smtp: '550 5.7.1 Approval link not valid',
    message: 'This approval link is not valid: it was mistyped, replaced by a newer one, or never issued.',
  },
  APPROVAL_LINK_EXPIRED: {
    status: 410,
    smtp: '550 5.7.1 Approval link expired',
    message: 'This approval link has expired with the hold it announced (APPROVAL_TTL).',
  },
  APPROVAL_LINK_USED: {
    status: 410,
    smtp: '550 5.7.1 Approval link already used',
    message: 'This approval link was already used; each link decides once.',
  },
  APPROVAL_LINK_REVOKED: {
    status: 403,
    smtp: '550 5.7.1 Approval link revoked',
    message: "This address is no longer an approver of the mailbox (its policy's approverAddresses).",
  },
  APPROVAL_LINK_DECIDED: {
    status: 409,
    smtp: '550 5.7.1 Approval already decided',
    message: 'This message was already decided by other means; the link changed nothing.',
  },
  // Agent-native reading (docs/api.md, "Search", "Attachment text", "Webhooks").
  SEARCH_QUERY_INVALID: {
    status: 400,
    smtp: '501 5.5.4 Syntax error in parameters',
    message: 'The search query is not valid (see docs/api.md, Search).',
  },
  ATTACHMENT_TEXT_UNSUPPORTED: {
    status: 415,
    smtp: '554 5.6.1 Media not supported',
    message: 'Text can be extracted from PDF, DOCX, HTML and text attachments only.',
  },
  ATTACHMENT_TEXT_TOO_LARGE: {
    status: 413,
    smtp: '552 5.3.4 Message size exceeds fixed limit',
    message: 'The attachment is larger than the text-extraction size cap.',
  },
  ATTACHMENT_TEXT_FAILED: {
    status: 422,
    smtp: '554 5.6.0 Content could not be processed',
    message: 'Text extraction failed or exceeded its time limit for this attachment.',
  },
  WEBHOOK_URL_INVALID: {
    status: 400,
    smtp: '501 5.5.4 Syntax error in parameters',
    message: 'The webhook url must be an absolute http(s) URL to a public address.',
  },
  WEBHOOK_LIMIT_REACHED: {
    status: 409,
    smtp: '452 4.3.1 Too many webhooks',
    message:
      'This mailbox already has WEBHOOK_MAX_PER_MAILBOX webhooks or its domain WEBHOOK_MAX_PER_DOMAIN; remove one first.',
  },
  INTERNAL: { status: 500, smtp: '451 4.3.0 Local error in processing', message: 'Internal error.' },
  UNAVAILABLE: {
    status: 503,
    smtp: '451 4.3.0 Temporary storage failure, try again later',
    message: 'Storage is unavailable; try again.',
  },
} as const satisfies Record<string, { status: number; smtp: string; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class AppError extends Error {
  readonly status: number;
  /** Seconds to wait, for 429s (Retry-After). */
  retryAfterSeconds?: number;

  constructor(
    readonly code: ErrorCode,
    detail?: string,
    extra?: { retryAfterSeconds?: number; cause?: unknown },
  ) {
    super(detail ?? ERRORS[code].message, extra?.cause ? { cause: extra.cause } : undefined);
    this.status = ERRORS[code].status;
    if (extra?.retryAfterSeconds !== undefined) this.retryAfterSeconds = extra.retryAfterSeconds;
  }

  get smtpReply(): string {
    return ERRORS[this.code].smtp;
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;

/** Not found and not visible are the same answer, so ids of other tenants reveal nothing. */
export const notFound = (what: string): AppError => new AppError('NOT_FOUND', `${what} not found.`);
