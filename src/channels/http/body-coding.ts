import type { ParameterizedContext } from 'koa';
import { AppError } from '../../core/base/errors.js';

/**
 * Request bodies are accepted uncompressed only. RFC 9110 §8.4.1 lets a server answer 415 to a
 * content coding it does not accept; decompressing would add a second size to police (a 1 KiB
 * gzip bomb inflating past MAX_JSON_BYTES) and a class of corrupt-stream errors, for no client
 * that needs it.
 */
export function assertIdentityCoding(ctx: ParameterizedContext): void {
  const coding = (ctx.get('content-encoding') || 'identity').trim().toLowerCase();
  if (coding !== 'identity')
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Encoding is not supported; send the body uncompressed.');
}
