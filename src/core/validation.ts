import type { z } from 'zod';
import { AppError, type ErrorCode } from './errors.js';
import { assertStorableText } from './text.js';

/**
 * Input fields whose 400 has its own catalog code (spec: the API names them); any other field is
 * VALIDATION_FAILED. One table for every channel, so HTTP, MCP and the Socket.IO handshake give
 * the same code for the same mistake.
 */
const FIELD_CODES: Readonly<Record<string, ErrorCode>> = {
  mailboxAddress: 'MAILBOX_ADDRESS_INVALID',
  cursor: 'CURSOR_INVALID',
  expiresAtTs: 'EXPIRY_INVALID',
};

/**
 * A validation problem as the catalog's 400: the first issue, worded `field: message` (the field
 * path joined with dots, or `where` for a problem with the whole input), with the field's own
 * code when it has one.
 */
export function validationError(error: z.ZodError, where: string): AppError {
  const issue = error.issues[0];
  const field = issue?.path.length ? issue.path.map(String).join('.') : where;
  return new AppError(FIELD_CODES[field] ?? 'VALIDATION_FAILED', `${field}: ${issue?.message ?? 'invalid input'}`);
}

/**
 * Parses a channel's input with a core schema: a failure is `validationError`, and text that
 * PostgreSQL cannot store is TEXT_INVALID (core/text.ts). `where` names the input as a whole
 * (`body`, `query`, `arguments`, `auth`). A missing input parses as `{}`.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) throw validationError(parsed.error, where);
  assertStorableText(parsed.data, where);
  return parsed.data;
}
