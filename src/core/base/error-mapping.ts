import { z } from 'zod';
import { AppError } from './errors.js';
import { validationError } from './validation.js';
import { BlobTooLargeError, isStorageUnavailable } from '../../storage/errors.js';

/** What HTTP libraries (body parser, router) attach to the errors they throw (http-errors). */
interface StatusError {
  status?: unknown;
  statusCode?: unknown;
  type?: unknown;
  expose?: unknown;
  message?: unknown;
  /** raw-body's byte limit on a too-large body. */
  limit?: unknown;
}

/** PAYLOAD_TOO_LARGE that states the limit the request went past, when it is known. */
export function tooLarge(limitBytes?: number, what = 'request body'): AppError {
  if (limitBytes === undefined || !Number.isFinite(limitBytes)) return new AppError('PAYLOAD_TOO_LARGE');
  return new AppError('PAYLOAD_TOO_LARGE', `The ${what} is too large: the limit is ${limitBytes} bytes.`);
}

/**
 * The one mapping of anything thrown to the catalog (docs/api.md, "Errors"), shared by every
 * channel:
 * - an AppError is itself;
 * - a zod validation problem is the 400 of its field (core/validation.ts);
 * - an unreachable database (storage/errors.ts, following `cause`) is UNAVAILABLE (503 /
 *   451 4.3.0), so the client retries; a blob store's BlobTooLargeError is PAYLOAD_TOO_LARGE;
 * - an error a parsing library threw with an HTTP status (http-errors: bad JSON, too large,
 *   wrong media type, wrong method) is the catalog entry of that status;
 * - anything else (a bug, a string thrown) is INTERNAL (500 / 451 4.3.0): its message and stack
 *   stay in the log (`cause`), never in an answer.
 * Channels log INTERNAL (`isUnexpected`) and then render the result with their one wire mapper.
 */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof z.ZodError) return validationError(err, 'input');
  if (isStorageUnavailable(err)) return new AppError('UNAVAILABLE', undefined, { cause: err });
  if (err instanceof BlobTooLargeError) return tooLarge(err.maxBytes, 'file');
  const fromLibrary = statusError(err);
  return fromLibrary ?? new AppError('INTERNAL', undefined, { cause: err });
}

/** True for the catch-all INTERNAL: a failure nobody anticipated, which a channel logs. */
export const isUnexpected = (e: AppError): boolean => e.code === 'INTERNAL';

function statusError(err: unknown): AppError | null {
  if (!err || typeof err !== 'object') return null;
  const e = err as StatusError;
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : null;
  const message = typeof e.message === 'string' ? e.message : '';
  if (status === 413 || e.type === 'entity.too.large')
    return tooLarge(typeof e.limit === 'number' ? e.limit : undefined);
  if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE');
  if (status === 405) return new AppError('METHOD_NOT_ALLOWED');
  if (status === 400 && (e.type === 'entity.parse.failed' || /json/i.test(message)))
    return new AppError('JSON_INVALID');
  // A 400 whose library marked its message safe to show (http-errors `expose`).
  if (status === 400) return new AppError('VALIDATION_FAILED', e.expose === true ? message : undefined);
  return null;
}
