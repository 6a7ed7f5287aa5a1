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

type Issue = z.core.$ZodIssue;

/**
 * One issue as `field: what is wrong`, in words a person acts on: a missing field is `required`,
 * a key the input does not have is named as unknown (zod's own words name neither plainly).
 */
function describeIssue(issue: Issue, where: string, input: unknown): string {
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const prefix = path ? `${path}.` : '';
    const names = issue.keys.map((k) => `${prefix}${k}`).join(', ');
    return `${names}: unknown ${issue.keys.length > 1 ? 'keys' : 'key'}`;
  }
  const field = path || where;
  if ((issue.code === 'invalid_type' || issue.code === 'invalid_union') && isMissing(issue, input))
    return `${field}: required`;
  return `${field}: ${issue.message}`;
}

/**
 * True when the field of a type issue is absent (or undefined). zod keeps the input out
 * of its issues unless asked, so the input is walked when the caller has it; otherwise zod's own
 * wording (`received undefined`) tells.
 */
function isMissing(issue: Issue, input: unknown): boolean {
  if (input === NO_INPUT) return issue.code === 'invalid_type' && /received undefined$/.test(issue.message);
  let value = input;
  for (const key of issue.path) {
    if (value === null || typeof value !== 'object') return false;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value === undefined;
}

const NO_INPUT = Symbol('no input');

/**
 * A validation problem as the catalog's 400: the first issue, worded by `describeIssue` (the
 * field path joined with dots, or `where` for a problem with the whole input), with the field's
 * own code when it has one.
 */
export function validationError(error: z.ZodError, where: string, input: unknown = NO_INPUT): AppError {
  const issue = error.issues[0];
  if (!issue) return new AppError('VALIDATION_FAILED', `${where}: invalid input`);
  const field = issue.path.length ? issue.path.map(String).join('.') : where;
  return new AppError(FIELD_CODES[field] ?? 'VALIDATION_FAILED', describeIssue(issue, where, input));
}

/**
 * Parses a channel's input with a core schema: a failure is `validationError`, and text that
 * PostgreSQL cannot store is TEXT_INVALID (core/text.ts). `where` names the input as a whole
 * (`body`, `query`, `arguments`, `auth`). A missing input parses as `{}`.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) throw validationError(parsed.error, where, value ?? {});
  assertStorableText(parsed.data, where);
  return parsed.data;
}
