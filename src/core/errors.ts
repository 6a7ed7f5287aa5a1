/**
 * The error catalog: every failure a caller can see, declared once with a stable code.
 * Channels map `AppError` in one place each: HTTP builds the envelope from `status`,
 * SMTP answers `smtp`, MCP returns a tool error carrying `status` as `code`.
 */
export const ERRORS = {
  VALIDATION_FAILED: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'The request is not valid.' },
  MAILBOX_ADDRESS_INVALID: { status: 400, smtp: '553 5.1.3 Bad destination mailbox address syntax', message: 'mailboxAddress is not a valid address.' },
  MAILBOX_ADDRESS_REQUIRED: { status: 400, smtp: '530 5.7.0 Authentication required', message: 'A domain token must name the mailbox with mailboxAddress.' },
  MAILBOX_ADDRESS_FORBIDDEN: { status: 400, smtp: '550 5.7.1 Sender not authorised', message: 'A mailbox token may act only for its own mailbox.' },
  CURSOR_INVALID: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'cursor is invalid.' },
  REPLY_MAILBOX_MISMATCH: { status: 400, smtp: '550 5.7.1 Sender not authorised', message: 'mailboxAddress differs from the mailbox of the parent message.' },
  ATTACHMENT_FORM_INVALID: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'The upload must be multipart/form-data with one file field.' },
  ATTACHMENT_UNKNOWN: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'An attachmentId is unknown, already used, or belongs to another mailbox.' },
  SCOPE_NOT_GRANTABLE: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'A new token may only carry scopes its creator holds.' },
  EXPIRY_INVALID: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'expiresAtTs is invalid.' },
  TOKEN_IN_URL: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'Access tokens are never accepted in a URL; send it in the handshake auth or the Authorization header.' },
  JSON_INVALID: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'The body is not valid JSON.' },
  TEXT_INVALID: { status: 400, smtp: '501 5.5.4 Syntax error in parameters', message: 'Text may not contain NUL characters or unpaired surrogates.' },
  HTTP_MALFORMED: { status: 400, smtp: '500 5.5.2 Syntax error', message: 'The HTTP request is malformed.' },
  HTTP_HEADERS_TOO_LARGE: { status: 431, smtp: '500 5.5.2 Line too long', message: 'The request line or header section is too large.' },
  HTTP_REQUEST_TIMEOUT: { status: 408, smtp: '421 4.4.2 Timeout, closing connection', message: 'The request did not arrive in time.' },
  UNAUTHENTICATED: { status: 401, smtp: '535 5.7.8 Authentication credentials invalid', message: 'A valid access token is required.' },
  LOGIN_FAILED: { status: 401, smtp: '535 5.7.8 Authentication credentials invalid', message: 'Address or password is wrong.' },
  SCOPE_MISSING: { status: 403, smtp: '535 5.7.8 Authentication credentials invalid', message: 'The token lacks a required scope.' },
  TOKEN_KIND_FORBIDDEN: { status: 403, smtp: '535 5.7.8 Authentication credentials invalid', message: 'This route needs a different kind of token.' },
  DOMAIN_FORBIDDEN: { status: 403, smtp: '535 5.7.8 Authentication credentials invalid', message: 'This token does not govern that domain.' },
  ORIGIN_FORBIDDEN: { status: 403, smtp: '550 5.7.1 Origin not allowed', message: 'This Origin may not open the real-time connection.' },
  NOT_FOUND: { status: 404, smtp: '550 5.1.1 Mailbox unavailable', message: 'Not found.' },
  ROUTE_NOT_FOUND: { status: 404, smtp: '500 5.5.1 Command unrecognised', message: 'No such route.' },
  METHOD_NOT_ALLOWED: { status: 405, smtp: '500 5.5.1 Command unrecognised', message: 'Method not allowed on this route.' },
  MAILBOX_EXISTS: { status: 409, smtp: '550 5.1.0 Address already exists', message: 'A mailbox with this address already exists.' },
  TOKEN_NOT_REVEALABLE: { status: 409, smtp: '550 5.7.1 Not revealable', message: 'The plaintext of this token is no longer available.' },
  IDEMPOTENCY_CONFLICT: { status: 409, smtp: '550 5.7.1 Idempotency key reused', message: 'This Idempotency-Key was used with a different request.' },
  PAYLOAD_TOO_LARGE: { status: 413, smtp: '552 5.3.4 Message size exceeds fixed limit', message: 'The request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, smtp: '554 5.6.1 Media not supported', message: 'Unsupported Content-Type.' },
  RATE_LIMITED: { status: 429, smtp: '451 4.7.1 Rate limit exceeded, try again later', message: 'Send rate limit reached for this mailbox.' },
  LOGIN_THROTTLED: { status: 429, smtp: '454 4.7.0 Too many failed attempts, try again later', message: 'Too many failed logins for this address.' },
  AUTH_THROTTLED: { status: 429, smtp: '454 4.7.0 Too many failed authentication attempts, try again later', message: 'Too many failed authentication attempts from this client address.' },
  // SMTP transport (RFC 5321 reply codes, RFC 3463 enhanced codes; HTTP statuses for completeness).
  AUTH_REQUIRED: { status: 401, smtp: '530 5.7.0 Authentication required', message: 'Authenticate first (RFC 4954 §6).' },
  AUTH_UNAVAILABLE: { status: 503, smtp: '454 4.7.0 Temporary authentication failure', message: 'Credentials cannot be checked right now (RFC 4954 §6).' },
  SENDER_NOT_IDENTITY: { status: 403, smtp: '550 5.7.1 Sender is not an active identity of the authenticated mailbox', message: 'MAIL FROM and the From header must be an active sender identity of the mailbox (RFC 3463 X.7.1).' },
  RELAY_DENIED: { status: 403, smtp: '550 5.7.1 Relaying denied', message: 'This server accepts mail only for its hosted domains (RFC 5321 §3.6.2).' },
  MAILBOX_UNKNOWN: { status: 404, smtp: '550 5.1.1 No such user here', message: 'No mailbox or active alias has this address (RFC 3463 X.1.1).' },
  TOO_MANY_RECIPIENTS: { status: 400, smtp: '452 4.5.3 Too many recipients', message: 'The recipient limit of one transaction is reached (RFC 5321 §4.5.3.1.10).' },
  TOO_MANY_CONNECTIONS: { status: 429, smtp: '421 4.7.0 Too many connections, try again later', message: 'Too many concurrent SMTP connections (RFC 5321 §3.8).' },
  BARE_LINE_ENDING: { status: 400, smtp: '554 5.6.0 Bare CR or LF in message data', message: 'CR and LF may only appear together as CRLF (RFC 5321 §2.3.8); refused against SMTP smuggling.' },
  HEADER_LIMIT: { status: 413, smtp: '552 5.3.4 Message header too large or too many header fields', message: 'The message header exceeds the size or field-count limit.' },
  MIME_LIMIT: { status: 400, smtp: '554 5.6.0 MIME structure exceeds limits', message: 'The message has too many parts, too deep a nesting or too large part headers.' },
  INTERNAL: { status: 500, smtp: '451 4.3.0 Local error in processing', message: 'Internal error.' },
  UNAVAILABLE: { status: 503, smtp: '451 4.3.0 Temporary storage failure, try again later', message: 'Storage is unavailable; try again.' },
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
