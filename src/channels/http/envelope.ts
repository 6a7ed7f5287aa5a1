import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Context, Next } from 'koa';
import { AppError, type ErrorCode } from '../../core/base/errors.js';
import { isUnexpected, toAppError } from '../../core/base/error-mapping.js';
import type { Logger } from '../../core/base/logger.js';
import { currentTraceId, currentTraceparent, withServerSpan } from '../../telemetry/tracing.js';

/** EnvelopMessage, the spec's wrapper of every HTTP response body, plus the stable `errorCode`. */
export interface Envelope<T = unknown> {
  data: T | null;
  code: number;
  /** The catalog key of the error (docs/api.md, "Errors"); null on success. */
  errorCode: ErrorCode | null;
  msg: string | null;
  errMsg: string | null;
  tid: string;
}

/** A response body: `error` null on success, else the catalog key and the sentence shown as errMsg. */
export function envelope<T>(
  status: number,
  data: T | null,
  error: { code: ErrorCode; message: string } | null = null,
): Envelope<T> {
  return {
    data,
    code: status,
    errorCode: error?.code ?? null,
    msg: STATUS_CODES[status] ?? null,
    errMsg: error?.message ?? null,
    tid: currentTraceId(),
  };
}

/**
 * Sends `body` as JSON encoded to UTF-8 here, once. Given the object, Koa measures the JSON's
 * UTF-8 length for Content-Length, Node measures it again when the response ends (no explicit
 * writeHead), and the socket write encodes it: three passes over a list page (~36 KB, a two-byte
 * string once any text in it is), where the bytes need one. Same headers and bytes either way.
 */
export function sendJson(ctx: Context, body: unknown): void {
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = utf8(JSON.stringify(body));
}

/** Room to encode a body of up to a third as many UTF-16 units (UTF-8 takes at most 3 bytes a unit). */
const scratch = Buffer.allocUnsafeSlow(1 << 20);

/**
 * `text` as UTF-8. Buffer.from measures the UTF-8 length before encoding, a pass of its own over a
 * two-byte string (20 of its 55 µs for a list page); encoding into scratch space and copying the
 * bytes out is one pass and a memcpy.
 */
function utf8(text: string): Buffer {
  if (text.length * 3 > scratch.length) return Buffer.from(text);
  return Buffer.copyBytesFrom(scratch, 0, scratch.write(text));
}

/** An HTTP answer: status, headers and envelope. */
export interface HttpErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: Envelope<null>;
}

/**
 * The one place HTTP (and MCP before its exchange, which is HTTP) renders a catalog error: the
 * envelope, `Retry-After` on a 429 (RFC 9110 §10.2.3), and on every 401 `WWW-Authenticate: Bearer`
 * (RFC 9110 §11.6.1 requires it; RFC 6750 §3: `error="invalid_token"` only when credentials were
 * sent, §3.1).
 */
export function httpError(e: AppError, credentialsSent: boolean): HttpErrorResponse {
  const headers: Record<string, string> = {};
  if (e.retryAfterSeconds !== undefined) headers['Retry-After'] = String(e.retryAfterSeconds);
  if (e.status === 401) {
    const detail = credentialsSent
      ? `, error="invalid_token", error_description="${e.message.replace(/["\\]/g, '')}"`
      : '';
    headers['WWW-Authenticate'] = `Bearer realm="mailbox-service"${detail}`;
  }
  return { status: e.status, headers, body: envelope(e.status, null, e) };
}

/**
 * The outermost middleware: opens the request's trace span (honouring `traceparent`), and turns
 * every thrown error, including body-parser and router errors, into the envelope. A 500 never
 * carries the error's message or stack.
 */
export function envelopeMiddleware(log: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    await withServerSpan(`${ctx.method} ${ctx.path}`, ctx.headers, async (span) => {
      const traceparent = currentTraceparent();
      if (traceparent) ctx.set('traceparent', traceparent);
      try {
        await next();
        if (ctx.status === 404 && ctx.body === undefined)
          throw new AppError('ROUTE_NOT_FOUND', `No route for ${ctx.method} ${ctx.path}.`);
      } catch (err) {
        const appError = toAppError(err);
        if (isUnexpected(appError) || appError.status >= 500)
          log.error('http.error', { method: ctx.method, path: ctx.path, err });
        const answer = httpError(appError, Boolean(ctx.get('authorization')));
        ctx.status = answer.status;
        ctx.set(answer.headers);
        ctx.body = answer.body;
      }
      span.setAttribute('http.response.status_code', ctx.status);
    });
  };
}

/** Sockets already answered: the parser reports every later chunk of a broken request again. */
const answered = new WeakSet<Duplex>();

/**
 * Node's HTTP parser refuses some requests before Koa sees them: malformed syntax, a request
 * line or header section over the header size limit (431), a body whose framing is ambiguous
 * (both Content-Length and Transfer-Encoding, RFC 9112 §6.3), a request not complete within the
 * server's requestTimeout (408). Node's own answer has no body;
 * this one is the envelope like every other refusal. What the client still sends is drained
 * for a moment, so it reads the answer instead of a connection reset. Wire to the server's
 * `clientError` event.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (answered.has(socket)) return;
  answered.add(socket);
  // A response already on its way (keep-alive) cannot be followed by another one.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (!socket.writable || inFlight || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const error = new AppError(
    err.code === 'HPE_HEADER_OVERFLOW'
      ? 'HTTP_HEADERS_TOO_LARGE'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'HTTP_REQUEST_TIMEOUT'
        : 'HTTP_MALFORMED',
  );
  void withServerSpan('HTTP client error', {}, async (span) => {
    span.setAttribute('http.response.status_code', error.status);
    const body = JSON.stringify(httpError(error, false).body);
    socket.end(
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  socket.resume();
  setTimeout(() => socket.destroy(), 2_000).unref();
}
