import { ProtocolError } from '@modelcontextprotocol/server';
import type { Logger } from '../../../core/base/logger.js';
import { errorPayload } from '../../shared/error-payload.js';
import { asAppError } from '../errors.js';

/** The extension's general-purpose error codes (SEP-3415, "Error Codes"). */
export const EVENT_ERROR = {
  invalidParams: -32602,
  notFound: -32011,
  forbidden: -32012,
  resourceExhausted: -32013,
  unsupported: -32014,
  internal: -32603,
} as const;

const codeFor = (status: number): number =>
  status === 400 || status === 413
    ? EVENT_ERROR.invalidParams
    : status === 404
      ? EVENT_ERROR.notFound
      : status === 401 || status === 403
        ? EVENT_ERROR.forbidden
        : status === 429
          ? EVENT_ERROR.resourceExhausted
          : EVENT_ERROR.internal;

/**
 * A failed events/* request as a JSON-RPC error: the extension's code for the HTTP-equivalent
 * status, and `data` the same `{ code, errorCode, errMsg }` a tool error carries.
 */
export function eventError(err: unknown, log: Logger, method: string): ProtocolError {
  const e = asAppError(err, log, method);
  return new ProtocolError(codeFor(e.status), e.message, errorPayload(e));
}
