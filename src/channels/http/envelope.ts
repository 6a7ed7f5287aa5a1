import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Context, Next } from 'koa';
import { AppError, isAppError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { currentTraceId, currentTraceparent, withServerSpan } from '../../telemetry/tracing.js';
import { isStorageUnavailable } from '../../storage/errors.js';

/** EnvelopMessage, the spec's wrapper of every HTTP response body. */
export interface Envelope<T = unknown> {
  data: T | null;
  code: number;
  msg: string | null;
  errMsg: string | null;
  tid: string;
}

export function envelope<T>(status: number, data: T | null, errMsg: string | null = null): Envelope<T> {
  return { data, code: status, msg: STATUS_CODES[status] ?? null, errMsg, tid: currentTraceId() };
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
        if (ctx.status === 404 && ctx.body === undefined) throw new AppError('ROUTE_NOT_FOUND', `No route for ${ctx.method} ${ctx.path}.`);
      } catch (err) {
        const appError = toAppError(err);
        if (appError.status >= 500) log.error('http.error', { method: ctx.method, path: ctx.path, err });
        ctx.status = appError.status;
        if (appError.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(appError.retryAfterSeconds));
        ctx.body = envelope(appError.status, null, appError.message);
      }
      span.setAttribute('http.response.status_code', ctx.status);
    });
  };
}

/** Maps anything thrown to the catalog; unknown errors become a bare 500. */
export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  if (isStorageUnavailable(err)) return new AppError('UNAVAILABLE');
  const e = err as { status?: number; statusCode?: number; type?: string; expose?: boolean; message?: string };
  const status = e?.status ?? e?.statusCode;
  if (status === 413 || e?.type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE');
  if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE');
  if (status === 405) return new AppError('METHOD_NOT_ALLOWED');
  if (status === 400 && (e?.type === 'entity.parse.failed' || /json/i.test(e?.message ?? ''))) return new AppError('JSON_INVALID');
  if (status === 400) return new AppError('VALIDATION_FAILED', e?.expose ? e.message : undefined);
  return new AppError('INTERNAL');
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
  const error = new AppError(err.code === 'HPE_HEADER_OVERFLOW' ? 'HTTP_HEADERS_TOO_LARGE' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'HTTP_REQUEST_TIMEOUT' : 'HTTP_MALFORMED');
  void withServerSpan('HTTP client error', {}, async (span) => {
    span.setAttribute('http.response.status_code', error.status);
    const body = JSON.stringify(envelope(error.status, null, error.message));
    socket.end(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\n`
      + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  socket.resume();
  setTimeout(() => socket.destroy(), 2_000).unref();
}
