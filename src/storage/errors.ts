/** Socket errors: the database host cannot be reached, or the connection to it broke. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/**
 * SQLSTATEs of a server going away or not taking connections: 57P01 admin_shutdown (also sent on
 * an immediate stop), 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, recovering),
 * 53300 too_many_connections; and class 08, connection exceptions.
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
/**
 * node-postgres and pg-pool report a lost or unobtainable connection with these messages and no
 * code: a server killed mid-query ("Connection terminated unexpectedly"), a client whose socket
 * already failed, a pool that cannot connect in time.
 */
const PG_CONNECTION_MESSAGES = [
  /^Connection terminated( unexpectedly| due to connection timeout)?$/,
  /^Client has encountered a connection error and is not queryable$/,
  /^Client was closed and is not queryable$/,
  /^timeout exceeded when trying to connect$/,
  /^Query read timeout$/,
  // SQLSTATE 55000 with this text: the database was closed to new connections (ALTER DATABASE …
  // ALLOW_CONNECTIONS false, as during maintenance); it answers again once reopened.
  /^database ".+" is not currently accepting connections$/,
];

/**
 * True when the database cannot be reached right now (connection refused, reset or cut, server
 * shutting down or recovering): channels answer 503 / 451 4.3.0 and the client retries. Follows
 * `cause`, since drivers and the ORM wrap the original error.
 */
export function isStorageUnavailable(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || SERVER_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)))
      return true;
    if (typeof message === 'string' && PG_CONNECTION_MESSAGES.some((re) => re.test(message))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** PostgreSQL not_null_violation on `column` (PGlite names it only in the message). */
export function isNotNullViolation(err: unknown, column: string): boolean {
  const e = err as { code?: string; column?: string; message?: string } | null;
  return e?.code === '23502' && (e.column === column || (e.message ?? '').includes(`"${column}"`));
}

/** PostgreSQL unique_violation, optionally on one named constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string; message?: string };
  if (e?.code !== '23505') return false;
  return constraint === undefined || e.constraint === constraint || (e.message ?? '').includes(constraint);
}

/**
 * A blob store's refusal of bytes past the `maxBytes` given to `put`. The core turns it into
 * PAYLOAD_TOO_LARGE (core/error-mapping.ts); storage knows no catalog.
 */
export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`blob larger than ${maxBytes} bytes`);
    this.name = 'BlobTooLargeError';
  }
}
