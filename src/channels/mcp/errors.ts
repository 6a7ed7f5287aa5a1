import type { z } from 'zod';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AppError } from '../../core/base/errors.js';
import { isUnexpected, toAppError } from '../../core/base/error-mapping.js';
import { parseInput } from '../../core/base/validation.js';
import type { Logger } from '../../core/base/logger.js';
import { errorPayload, type ErrorPayload } from '../shared/error-payload.js';

/** The error payload of a tool: `{ code, errorCode, errMsg, retryAfterSeconds? }` (channels/shared). */
export type ToolErrorPayload = ErrorPayload;

/**
 * Validates tool arguments with the tool's zod schema, by the rule every channel shares
 * (core/validation.ts): a 400 worded like HTTP's (`field: message`), with the field's own code.
 */
export function parseArguments<S extends z.ZodType>(schema: S, args: unknown): z.output<S> {
  return parseInput(schema, args, 'arguments');
}

/** Anything thrown, as the catalog's error (core/error-mapping.ts); the unexpected is logged here. */
export function asAppError(err: unknown, log: Logger, where: string): AppError {
  const e = toAppError(err);
  if (isUnexpected(e)) log.error('mcp.error', { tool: where, err });
  return e;
}

/**
 * The one place MCP renders a catalog error for a tool: a tool error result (isError) whose text
 * is the JSON `{ code, errorCode, errMsg }`. Not in structuredContent on purpose: the SDK client
 * (1.32) validates any structuredContent against the tool's success outputSchema even when isError
 * is set (modelcontextprotocol/typescript-sdk#1943), so a structured error would surface as a
 * client-side schema failure instead of the error. `_meta` carries the same payload for clients
 * that read structured data without parsing text.
 */
export function toolError(err: unknown, log: Logger, tool: string): CallToolResult {
  const payload = errorPayload(asAppError(err, log, tool));
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(payload) }],
    _meta: { 'mailbox-service/error': { ...payload } },
  };
}

/** MCP's "Resource not found" JSON-RPC error code (MCP spec, Resources: error handling). */
export const RESOURCE_NOT_FOUND = -32002;

/** The JSON-RPC error code of a failed resource read: 404 not found, 5xx internal, else invalid params. */
export const resourceRpcCode = (status: number): number =>
  status === 404 ? RESOURCE_NOT_FOUND : status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidParams;

/**
 * A failed resource read is a JSON-RPC error (resources have no isError result); its `data`
 * carries the same `{ code, errorCode, errMsg }` as a tool error.
 */
export function resourceError(err: unknown, log: Logger, uri: string): McpError {
  const e = asAppError(err, log, uri);
  return new McpError(resourceRpcCode(e.status), e.message, errorPayload(e));
}
