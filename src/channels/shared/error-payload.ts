import type { AppError, ErrorCode } from '../../core/base/errors.js';

/**
 * What a client learns of a catalog error on MCP and Socket.IO, beside the HTTP envelope's same
 * fields (docs/api.md, "Errors"): the HTTP-equivalent status as `code` (docs/contract.md), the stable
 * catalog key as `errorCode` so an agent can branch on it, the sentence as `errMsg`, and on a 429
 * the whole seconds to wait (HTTP's Retry-After).
 */
export interface ErrorPayload {
  code: number;
  errorCode: ErrorCode;
  errMsg: string;
  retryAfterSeconds?: number;
}

export function errorPayload(e: AppError): ErrorPayload {
  const payload: ErrorPayload = { code: e.status, errorCode: e.code, errMsg: e.message };
  if (e.retryAfterSeconds !== undefined) payload.retryAfterSeconds = e.retryAfterSeconds;
  return payload;
}
