import type { z } from 'zod';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AppError, isAppError } from '../../core/errors.js';
import { assertStorableText } from '../../core/text.js';
import type { Logger } from '../../core/logger.js';
import { isStorageUnavailable } from '../../storage/errors.js';

/** The error payload of a tool: the HTTP status as `code` and the envelope's `errMsg`. */
export interface ToolErrorPayload {
  code: number;
  errMsg: string;
  /** 429 only: whole seconds to wait, as HTTP's Retry-After. */
  retryAfterSeconds?: number;
}

/** Field-specific 400 codes, as the HTTP channel names them (same status, same errMsg). */
function issueCode(field: string) {
  if (field === 'mailboxAddress') return 'MAILBOX_ADDRESS_INVALID' as const;
  if (field === 'cursor') return 'CURSOR_INVALID' as const;
  return 'VALIDATION_FAILED' as const;
}

/**
 * Validates tool arguments with the tool's zod schema. A failure is a 400 worded like HTTP's
 * (`field: message`), so a model sees the same sentence whichever channel it uses.
 */
export function parseArguments<S extends z.ZodType>(schema: S, args: unknown): z.output<S> {
  const parsed = schema.safeParse(args ?? {});
  if (parsed.success) {
    assertStorableText(parsed.data, 'arguments');
    return parsed.data;
  }
  const issue = parsed.error.issues[0]!;
  const field = issue.path.length ? issue.path.join('.') : 'arguments';
  throw new AppError(issueCode(field), `${field}: ${issue.message}`);
}

/** Anything thrown, as the catalog's error; internals never leak (a 500 says "Internal error."). */
export function asAppError(err: unknown, log: Logger, where: string): AppError {
  if (isAppError(err)) return err;
  if (isStorageUnavailable(err)) return new AppError('UNAVAILABLE');
  log.error('mcp.error', { tool: where, err });
  return new AppError('INTERNAL');
}

/**
 * The one place MCP maps errors: a tool error result (isError) whose text is the JSON
 * `{ code, errMsg }`. Not in structuredContent on purpose: the SDK client (1.x) validates any
 * structuredContent against the tool's success outputSchema even when isError is set
 * (modelcontextprotocol/typescript-sdk#1943), so a structured error would surface as a
 * client-side schema failure instead of the error.
 */
export function toolError(err: unknown, log: Logger, tool: string): CallToolResult {
  const e = asAppError(err, log, tool);
  const payload: ToolErrorPayload = { code: e.status, errMsg: e.message };
  if (e.retryAfterSeconds !== undefined) payload.retryAfterSeconds = e.retryAfterSeconds;
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(payload) }] };
}

/** MCP's "Resource not found" JSON-RPC error code (MCP spec, Resources: error handling). */
const RESOURCE_NOT_FOUND = -32002;

/**
 * A failed resource read is a JSON-RPC error (resources have no isError result); its `data`
 * carries the same `{ code, errMsg }` as a tool error.
 */
export function resourceError(err: unknown, log: Logger, uri: string): McpError {
  const e = asAppError(err, log, uri);
  const rpcCode = e.status === 404 ? RESOURCE_NOT_FOUND : e.status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidParams;
  return new McpError(rpcCode, e.message, { code: e.status, errMsg: e.message });
}
